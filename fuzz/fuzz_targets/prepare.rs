//! Fuzzes the keeper's prepare over its whole input (bytes to JSON to a conversation, the
//! options, a stored state and a fault schedule): no input may panic, and a valid input comes
//! out valid, within the budget or with a reason.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod prepare_input;

fuzz_target!(|data: &[u8]| prepare_input::check(data));
