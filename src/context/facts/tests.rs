use super::*;
use crate::messages::{parse_messages, MessagesOptions};

fn texts(text: &str) -> Vec<String> {
    extract_facts(text).into_iter().map(|f| f.text).collect()
}

fn kinds(text: &str) -> Vec<(FactKind, String)> {
    extract_facts(text)
        .into_iter()
        .map(|f| (f.kind, f.text))
        .collect()
}

fn fixture(name: &str) -> crate::messages::Conversation {
    let path = format!(
        "{}/tests/data/compaction/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    parse_messages(&value, &MessagesOptions::default()).unwrap()
}

#[test]
fn paths_of_every_shape_and_not_fractions() {
    let text = "Edit src/context/mod.rs, then ./django/db/models/sql/where.py and /etc/hosts; \
        on Windows C:\\x\\y.txt. The bug is at pkg/foo.js:120. Read missing_colon.py too. \
        Not a/b, not and/or, not 1/2, not km/h, not 2024/01/02, not /tmp.";
    assert_eq!(
        kinds(text),
        [
            "src/context/mod.rs",
            "./django/db/models/sql/where.py",
            "/etc/hosts",
            "C:\\x\\y.txt",
            "pkg/foo.js:120",
            "missing_colon.py",
        ]
        .map(|t| (FactKind::Path, t.to_owned()))
    );
}

#[test]
fn json_escapes_end_a_path_and_make_no_drive() {
    // a tool input is scanned as JSON text: `\n` there is a newline, not part of a word
    let input = serde_json::json!({"path": "app/io.py", "content":
        "try:\n    load()\nexcept OSError as e:\n    log(e)\nwith open(p) as f:\n\tpass\n# see app/io_util.py\nimport app/conf.py\n"});
    let text = serde_json::to_string(&input).unwrap();
    assert_eq!(
        kinds(&text),
        [
            (FactKind::Path, "app/io.py".to_owned()),
            (FactKind::Identifier, "OSError".to_owned()),
            (FactKind::Path, "app/io_util.py".to_owned()),
            (FactKind::Path, "app/conf.py".to_owned()),
        ]
    );
    // a Windows path stays whole, in plain text and escaped in JSON
    assert_eq!(
        texts("on C:\\new\\tmp.txt and (D:\\rust\\a.rs)"),
        ["C:\\new\\tmp.txt", "D:\\rust\\a.rs"]
    );
    assert_eq!(
        texts(r#"{"p":"C:\\\\new\\\\tmp.txt"}"#),
        [r"C:\\\\new\\\\tmp.txt"]
    );
}

#[test]
fn urls_lose_trailing_punctuation_and_unbalanced_brackets() {
    let text = "See https://example.com/a?b=1&c=2. Also (http://x.org/y) and \
        [docs](https://docs.rs/serde/latest/serde/), ws://localhost:8080/socket, \
        file:///tmp/a.txt!";
    assert_eq!(
        texts(text),
        [
            "https://example.com/a?b=1&c=2",
            "http://x.org/y",
            "https://docs.rs/serde/latest/serde/",
            "ws://localhost:8080/socket",
            "file:///tmp/a.txt",
        ]
    );
}

#[test]
fn identifiers_carry_information_and_english_does_not() {
    let text = "The get_prep_value method of SimpleLazyObject calls Foo::bar and \
        self.resolve_lookup_value() after obj.method(); see commit 35431298226165986ad07e91f9d3aca721ff38ec \
        (short 20edef5), id 123e4567-e89b-12d3-a456-426614174000, call toolu_01A09q90qw90lq917835lq9 \
        and call_abc123, issue #1234, release v1.2.3, __init__ and HTTPServer and Linear1D. \
        Plain words: The Model, decade, deadbeef, print(), e.g. i.e. GitHub IDs.";
    let found = texts(text);
    assert_eq!(
        found,
        [
            "get_prep_value",
            "SimpleLazyObject",
            "Foo::bar",
            "self.resolve_lookup_value()",
            "obj.method()",
            "35431298226165986ad07e91f9d3aca721ff38ec",
            "20edef5",
            "123e4567-e89b-12d3-a456-426614174000",
            "toolu_01A09q90qw90lq917835lq9",
            "call_abc123",
            "#1234",
            "v1.2.3",
            "__init__",
            "HTTPServer",
            "Linear1D",
        ]
    );
    assert!(extract_facts(text)
        .iter()
        .all(|f| f.kind == FactKind::Identifier));
}

#[test]
fn numbers_need_a_unit() {
    let text = "Offload over 20,000 tokens (128 KiB), took 2.5 ms and 10 s, 95% done, \
        3 MB free, 42 files, 200k tokens, 1.5GB. Numbers alone: 42, 3.14, 2024, 1,000. \
        Not units: 5 apples, 7 and 8.";
    assert_eq!(
        texts(text),
        [
            "20,000 tokens",
            "128 KiB",
            "2.5 ms",
            "10 s",
            "95%",
            "3 MB",
            "42 files",
            "200k tokens",
            "1.5GB",
        ]
    );
}

#[test]
fn commands_in_backticks_blocks_and_shell_tool_inputs() {
    let text = "Run `cargo test --locked` then `npm run build`; `git checkout -b x`. \
        Not `division` nor `the answer`. The crate `regex-lite` stays.\n\
        ```bash\ncd /testbed && python3 reproduce_issue.py\n```\n\
        {\"command\":\"grep -n \\\"def resolve\\\" django/db/models/sql/query.py\"}";
    assert_eq!(
        kinds(text),
        [
            (FactKind::Command, "cargo test --locked"),
            (FactKind::Command, "npm run build"),
            (FactKind::Command, "git checkout -b x"),
            (FactKind::Identifier, "regex-lite"),
            (
                FactKind::Command,
                "cd /testbed && python3 reproduce_issue.py"
            ),
            (FactKind::Path, "reproduce_issue.py"),
            (
                FactKind::Command,
                "grep -n \"def resolve\" django/db/models/sql/query.py"
            ),
            (FactKind::Path, "django/db/models/sql/query.py"),
        ]
        .map(|(k, t)| (k, t.to_owned()))
    );
}

#[test]
fn facts_are_deduplicated_in_order_of_first_appearance() {
    let text = "b_var then a_var then b_var, src/x/y.rs and a_var and src/x/y.rs.";
    assert_eq!(texts(text), ["b_var", "a_var", "src/x/y.rs"]);
    let across = extract_facts_all(["one_two three", "four_five one_two"]);
    let across: Vec<_> = across.into_iter().map(|f| f.text).collect();
    assert_eq!(across, ["one_two", "four_five"]);
}

#[test]
fn huge_input_is_capped_and_long_facts_cut_or_dropped() {
    let minified = format!(
        "x{}y https://a.io/{}",
        ")".repeat(200_000),
        "b".repeat(100_000)
    );
    let facts = extract_facts(&minified);
    assert_eq!(facts.len(), 1);
    assert!(facts[0].text.len() <= MAX_FACT_LEN);
    let many: String = (0..5_000).map(|i| format!("var_{i} ")).collect();
    assert_eq!(extract_facts(&many).len(), MAX_FACTS);
    let blob = format!("a_{}", "b".repeat(300));
    assert!(extract_facts(&blob).is_empty());
    let long = format!("`git commit -m {}`", "x".repeat(300));
    let facts = extract_facts(&long);
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].text.len(), MAX_FACT_LEN);
}

#[test]
fn missing_facts_are_named_in_keep_and_lost_by_the_summary() {
    let span = [
        "Opened src/context/compact.rs and ran `cargo test --locked`; fn plan_compaction \
         takes 20,000 tokens. Also touched src/lib.rs and old_name.",
        "{\"command\": \"grep -rn \\\"x\\\" src\"}",
    ];
    let keep = [
        "Next: fix plan_compaction in src/context/compact.rs, run cargo test --locked",
        "the first request mentions src/lib.rs and 20,000 tokens and {\"command\": \"grep -rn \\\"x\\\" src\"}",
    ];
    let summary = "We changed src/lib.rs.";
    let missing = missing_facts(&span, &keep, &[], summary, 10);
    let got: Vec<_> = missing.iter().map(|f| (f.kind, f.text.as_str())).collect();
    // the latest text first, each in its order
    assert_eq!(
        got,
        [
            (FactKind::Command, "grep -rn \"x\" src"),
            (FactKind::Path, "src/context/compact.rs"),
            (FactKind::Command, "cargo test --locked"),
            (FactKind::Identifier, "plan_compaction"),
            (FactKind::Number, "20,000 tokens"),
        ]
    );
    // what the agent wrote goes first
    let written = ["I will rename plan_compaction next"];
    let used = missing_facts(&span, &keep, &written, summary, 2);
    let got: Vec<_> = used.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(got, ["plan_compaction", "grep -rn \"x\" src"]);
    assert_eq!(missing_facts(&span, &keep, &[], summary, 2).len(), 2);
    assert!(missing_facts(&span, &keep, &[], summary, 0).is_empty());
    assert!(missing_facts(&span, &[], &[], summary, 10).is_empty());
    // Pinned once, nothing is missing any more.
    let pinned = pin(summary, &missing);
    assert!(missing_facts(&span, &keep, &[], &pinned, 10).is_empty());
}

#[test]
fn a_fact_contained_in_a_chosen_one_is_left_out() {
    let span = ["tests/missing_colon.py and missing_colon.py"];
    let keep = ["tests/missing_colon.py"];
    let got = missing_facts(&span, &keep, &[], "", 10);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].text, "tests/missing_colon.py");
}

#[test]
fn pin_appends_a_short_list_or_nothing() {
    assert_eq!(pin("The summary.", &[]), "The summary.");
    let facts = [
        Fact {
            kind: FactKind::Path,
            text: "src/a.rs".to_owned(),
        },
        Fact {
            kind: FactKind::Command,
            text: "echo `x`".to_owned(),
        },
    ];
    assert_eq!(
        pin("The summary.\n", &facts),
        format!("The summary.\n\n{PIN_HEADING}\n- `src/a.rs`\n- `` echo `x` ``")
    );
    assert_eq!(
        serde_json::to_value(&facts[0]).unwrap(),
        serde_json::json!({"kind": "path", "text": "src/a.rs"})
    );
}

#[test]
fn a_recorded_swe_agent_run_yields_its_paths_and_commands() {
    let conv = fixture("swe-agent-function-calling-simple.json");
    let texts: Vec<_> = conv.messages().iter().flat_map(message_texts).collect();
    let facts = extract_facts_all(texts.iter().map(|t| t.as_ref()));
    let has = |kind: FactKind, text: &str| facts.iter().any(|f| f.kind == kind && f.text == text);
    assert!(has(FactKind::Path, "tests/missing_colon.py"), "{facts:#?}");
    assert!(has(
        FactKind::Path,
        "/SWE-agent__test-repo/tests/missing_colon.py"
    ));
    assert!(has(FactKind::Command, "python tests/missing_colon.py"));
    assert!(has(FactKind::Identifier, "20edef5"));
    for word in [
        "SyntaxError:",
        "division",
        "colon",
        "file",
        "The",
        "issue",
        "bash",
    ] {
        assert!(facts.iter().all(|f| f.text != word), "{word} is not a fact");
    }
    assert!(facts
        .iter()
        .all(|f| f.text.len() <= MAX_FACT_LEN && !f.text.contains('\n')));
}

#[test]
fn a_recorded_mini_swe_agent_run_yields_its_paths_identifiers_and_commands() {
    let conv = fixture("mini-swe-agent-django-12663.json");
    let texts: Vec<_> = conv.messages().iter().flat_map(message_texts).collect();
    let facts = extract_facts_all(texts.iter().map(|t| t.as_ref()));
    let has = |kind: FactKind, text: &str| facts.iter().any(|f| f.kind == kind && f.text == text);
    assert!(
        has(FactKind::Path, "django/db/models/fields/__init__.py"),
        "{facts:#?}"
    );
    assert!(has(FactKind::Path, "django/db/models/sql/query.py"));
    assert!(has(FactKind::Identifier, "SimpleLazyObject"));
    assert!(has(FactKind::Identifier, "get_prep_value"));
    assert!(has(
        FactKind::Identifier,
        "35431298226165986ad07e91f9d3aca721ff38ec"
    ));
    assert!(has(FactKind::Command, "python3 reproduce_issue.py"));
    assert!(has(
        FactKind::Command,
        "grep -n \"def resolve_lookup_value\" django/db/models/sql/query.py"
    ));
    for word in [
        "Django",
        "THOUGHT",
        "traceback",
        "regression",
        "Description",
        "root",
    ] {
        assert!(facts.iter().all(|f| f.text != word), "{word} is not a fact");
    }
}
