use std::collections::BTreeMap;
#[test]
fn cal() {
    let texts: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string("tests/data/texts.json").unwrap()).unwrap();
    let conv: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string("tests/data/sample-conversation.json").unwrap(),
    )
    .unwrap();
    let mut all: Vec<(String, String)> = texts.into_iter().collect();
    for (i, m) in conv.iter().enumerate() {
        if let Some(s) = m["content"].as_str() {
            all.push((format!("msg{i}"), s.to_string()));
        }
    }
    for (name, t) in all {
        let e = context_keeper::count_tokens(&t, context_keeper::Encoding::O200kBase).unwrap();
        let x = context_keeper::estimate_tokens(&t);
        println!(
            "{name:16} exact {e:5} est {x:5} err {:+.2}",
            (x as f64 - e as f64) / (e.max(1) as f64)
        );
    }
}
