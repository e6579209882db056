//! What every parser target checks on any input: no panic, and for input that parses, a
//! lossless round trip and a repair that validates and is idempotent.

use context_keeper::messages::{
    detect_format, parse_messages_str, repair_messages, validate_messages, Format, MessagesOptions,
    ProblemKind,
};

pub fn check(data: &[u8], format: Option<Format>) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = serde_json::from_str::<serde_json::Value>(text).map(|v| detect_format(&v));
    for allow_pending_calls in [false, true] {
        let options = MessagesOptions {
            format,
            allow_pending_calls,
        };
        let Ok(conv) = parse_messages_str(text, &options) else {
            return;
        };
        let input = conv.to_value();
        let original: serde_json::Value = serde_json::from_str(text).expect("parsed text is JSON");
        assert_eq!(input, original, "parse then write changed the input");
        let reparsed = parse_messages_str(&conv.to_json_string(), &options)
            .expect("written JSON parses again");
        assert_eq!(
            reparsed.to_value(),
            input,
            "round trip changed the conversation"
        );
        let format = Some(conv.format());
        let options = MessagesOptions {
            format,
            allow_pending_calls,
        };
        let problems = validate_messages(&input, &options).expect("parsed input validates");
        let repaired = repair_messages(&input, &options).expect("parsed input repairs");
        if problems.is_empty() {
            assert_eq!(
                repaired.messages, input,
                "repair changed a valid conversation"
            );
        }
        let after =
            validate_messages(&repaired.messages, &options).expect("repaired output parses");
        assert_eq!(
            after, repaired.unrepaired,
            "unrepaired problems are misreported"
        );
        assert!(
            after
                .iter()
                .all(|p| p.kind == ProblemKind::RoleOrder && p.message_index == 0),
            "repair left {after:?}"
        );
        let again = repair_messages(&repaired.messages, &options).expect("repaired output repairs");
        assert!(
            again.report.is_empty(),
            "repair is not idempotent: {:?}",
            again.report
        );
    }
}
