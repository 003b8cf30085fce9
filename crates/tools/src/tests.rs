use super::*;
use proto::config::{HttpFetch, ReadFile};

fn cfg() -> Tools {
    Tools {
        read_file: ReadFile {
            roots: vec![std::env::temp_dir()],
            ..ReadFile::default()
        },
        http_fetch: HttpFetch::default(),
    }
}

fn is_error_naming(out: &ToolOutput, words: &[&str]) {
    assert!(out.content.starts_with("error: "), "{}", out.content);
    for w in words {
        assert!(out.content.contains(w), "{w:?} not in {}", out.content);
    }
}

#[test]
fn schemas_name_four_functions_each_with_its_first_required_string_argument() {
    let s = schemas();
    let list = s.as_array().unwrap();
    let got: Vec<(&str, &str)> = list
        .iter()
        .map(|t| {
            assert_eq!(t["type"], "function");
            let f = &t["function"];
            assert!(!f["description"].as_str().unwrap().is_empty());
            let p = &f["parameters"];
            assert_eq!(p["type"], "object");
            let arg = p["required"][0].as_str().unwrap();
            assert_eq!(p["properties"][arg]["type"], "string");
            (f["name"].as_str().unwrap(), arg)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("read_file", "path"),
            ("http_fetch", "url"),
            ("recall", "query"),
            ("remind", "when")
        ]
    );
}

#[test]
fn the_schemas_name_exactly_the_tools_the_config_accepts_in_compact_summarise() {
    let s = schemas();
    let names: Vec<&str> = s
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, proto::config::TOOL_NAMES);
}

#[test]
fn schemas_are_byte_stable() {
    assert_eq!(schemas().to_string(), schemas().to_string());
}

#[test]
fn invalid_json_arguments_are_an_error_result() {
    for name in [READ_FILE, HTTP_FETCH] {
        for bad in ["", "{", "{\"path\": }", "not json"] {
            let out = run_local(name, bad, &cfg());
            is_error_naming(&out, &[name, "not valid JSON"]);
            assert_eq!(out.label, Label::PUBLIC);
        }
    }
}

#[test]
fn arguments_that_are_not_an_object_are_an_error_result() {
    let out = run_local(READ_FILE, "[\"/tmp/x\"]", &cfg());
    is_error_naming(&out, &["read_file", "JSON object"]);
}

#[test]
fn a_missing_path_is_an_error_naming_the_field() {
    let out = run_local(READ_FILE, "{\"file\": \"/tmp/x\"}", &cfg());
    assert_eq!(
        out.content,
        "error: read_file: missing the string argument `path`"
    );
    let out = run_local(READ_FILE, "{\"path\": 7}", &cfg());
    is_error_naming(&out, &["`path`"]);
}

#[test]
fn a_missing_url_is_an_error_naming_the_field() {
    let out = run_local(HTTP_FETCH, "{}", &cfg());
    assert_eq!(
        out.content,
        "error: http_fetch: missing the string argument `url`"
    );
}

#[test]
fn an_unknown_tool_is_an_error_naming_it() {
    let out = run_local("rm_rf", "{}", &cfg());
    is_error_naming(&out, &["unknown tool \"rm_rf\"", "read_file", "http_fetch"]);
    assert_eq!(out.label, Label::PUBLIC);
}

#[test]
fn recall_is_not_run_locally() {
    let out = run_local(RECALL, "{\"query\": \"x\"}", &cfg());
    is_error_naming(&out, &["recall", "turn loop"]);
}
