//! Stored JSON read back from bytes.
//!
//! Every reader of the crate parses JSON text through serde_json's `&str` reader: a second one
//! for `&[u8]` (`serde_json::from_slice`) would build the whole parser again for each type it
//! reads, which costs the wasm build a few KB for nothing (a JSON text outside its strings is
//! ASCII, and serde_json checks the strings are UTF-8 either way).

use serde::de::DeserializeOwned;

/// `bytes` read as the JSON of a `T`; `None` when they are not UTF-8 or not that JSON.
pub fn from_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    serde_json::from_str(std::str::from_utf8(bytes).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_from_slice_reads_and_refuses_what_it_refuses() {
        let good: &[&[u8]] = &[b"{\"a\":1}", b" [1, \"\xc3\xa9\"] ", b"null"];
        for bytes in good {
            let ours: Option<serde_json::Value> = from_bytes(bytes);
            assert_eq!(ours, serde_json::from_slice(bytes).ok());
            assert!(ours.is_some());
        }
        let bad: &[&[u8]] = &[b"{\"a\":\xff}", b"[\"\xff\"]", b"{", b""];
        for bytes in bad {
            assert_eq!(from_bytes::<serde_json::Value>(bytes), None);
            assert!(serde_json::from_slice::<serde_json::Value>(bytes).is_err());
        }
    }
}
