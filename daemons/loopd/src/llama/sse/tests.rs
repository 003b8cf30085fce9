use super::*;

fn run(body: &str) -> (Result<Completion, StreamError>, Vec<String>) {
    let mut seen = Vec::new();
    let result = read_stream(body.as_bytes(), &mut |d| seen.push(format!("{d:?}")));
    (result, seen)
}

const TIMINGS: &str = r#""timings":{"cache_n":3,"prompt_n":25,"prompt_ms":1.5,"predicted_n":6}"#;

#[test]
fn content_deltas_are_joined_and_timings_read_from_the_final_chunk() {
    let body = format!(
        "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":null}}}}]}}\n\n\
         data: {{\"choices\":[{{\"delta\":{{\"content\":\"Hey\"}}}}]}}\n\n\
         data: {{\"choices\":[{{\"delta\":{{\"content\":\", you\"}}}}]}}\n\n\
         data: {{\"choices\":[{{\"finish_reason\":\"stop\",\"delta\":{{}}}}],{TIMINGS}}}\n\n\
         data: [DONE]\n\n"
    );
    let (c, seen) = run(&body);
    let c = c.unwrap();
    assert_eq!(c.content.as_deref(), Some("Hey, you"));
    // The `finish_reason` chunk gives its timings and nothing else: no text, no call,
    // no delta to the callback (the reason itself is not kept; see the module doc).
    assert!(c.tool_calls.is_empty());
    assert_eq!(
        c.timings,
        Some(Tokens {
            cache_n: 3,
            prompt_n: 25,
            predicted_n: 6
        })
    );
    assert_eq!(seen, [r#"Content("Hey")"#, r#"Content(", you")"#]);
}

#[test]
fn timings_on_a_usage_chunk_without_choices_are_read() {
    let body = format!(
        "data: {{\"choices\":[{{\"finish_reason\":\"stop\",\"delta\":{{}}}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{}},{TIMINGS}}}\n\ndata: [DONE]\n\n"
    );
    let c = run(&body).0.unwrap();
    assert_eq!(c.timings.unwrap().prompt_n, 25);
    assert_eq!(c.content, None);
}

#[test]
fn tool_call_fragments_are_joined_by_index() {
    let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"function\":{\"name\":\"recall\",\"arguments\":\"{}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"/x\\\"}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"finish_reason\":\"tool_calls\",\"delta\":{}}]}\n\n\
                data: [DONE]\n\n";
    let (c, seen) = run(body);
    let c = c.unwrap();
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(c.tool_calls[0].id, "c1");
    assert_eq!(c.tool_calls[0].name, "read_file");
    assert_eq!(c.tool_calls[0].arguments, "{\"path\":\"/x\"}");
    assert_eq!(c.tool_calls[1].name, "recall");
    assert_eq!(seen.len(), 4);
}

#[test]
fn a_stream_without_done_is_truncated() {
    for body in [
        "",
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hey\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"He",
    ] {
        assert!(
            matches!(run(body).0, Err(StreamError::Truncated)),
            "{body:?}"
        );
    }
}

#[test]
fn a_line_that_is_not_json_or_not_sse_is_malformed() {
    for body in [
        "data: {\"choices\":[{\"delta\"\n\ndata: [DONE]\n\n",
        "hello there\n\ndata: [DONE]\n\n",
    ] {
        assert!(
            matches!(run(body).0, Err(StreamError::Malformed(_))),
            "{body:?}"
        );
    }
}

#[test]
fn comments_and_crlf_are_accepted() {
    let body = ": keep-alive\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
    assert_eq!(run(body).0.unwrap().content.as_deref(), Some("a"));
}

#[test]
fn an_error_object_in_the_stream_is_a_server_error() {
    let body = "data: {\"error\":{\"code\":400,\"type\":\"exceed_context_size_error\",\"message\":\"full\"}}\n\n";
    match run(body).0 {
        Err(StreamError::Server { kind, .. }) => assert_eq!(kind, "exceed_context_size_error"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_endless_line_is_refused_not_buffered() {
    let body = format!("data: {}", "x".repeat(MAX_SSE_LINE + 10));
    assert!(matches!(run(&body).0, Err(StreamError::Malformed(_))));
}

#[test]
fn a_huge_tool_call_index_is_malformed() {
    let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":100000,\"function\":{\"arguments\":\"\"}}]}}]}\n\ndata: [DONE]\n\n";
    assert!(matches!(run(body).0, Err(StreamError::Malformed(_))));
}

#[test]
fn data_lines_without_a_blank_line_are_refused_not_gathered_forever() {
    // Regression: each line was capped but one event's data lines were not.
    let line = format!("data: {}\n", "x".repeat(1024));
    let body = line.repeat(MAX_SSE_EVENT / 1024 + 2);
    let err = read_stream(body.as_bytes(), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("an event's data is over"), "{err}");
}

#[test]
fn a_passed_deadline_ends_the_stream() {
    let body = ": keep-alive\n\n".repeat(10);
    let past = Some(std::time::Instant::now());
    let err = read_stream_until(body.as_bytes(), &mut |_| {}, past).unwrap_err();
    assert!(err.to_string().contains("llama.timeout_s"), "{err}");
}
