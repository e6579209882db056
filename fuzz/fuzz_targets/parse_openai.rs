//! Fuzzes the openai message parser: no input may panic, and whatever parses
//! round-trips and repairs to a valid conversation.
#![no_main]

use context_keeper::messages::Format;
use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| common::check(data, Some(Format::OpenAi)));
