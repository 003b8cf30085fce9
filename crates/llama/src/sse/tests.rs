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
    // The `finish_reason` chunk gives its timings and its reason: no text, no call,
    // no delta to the callback.
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
    assert_eq!(c.finish.as_deref(), Some("stop"));
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
fn data_that_is_not_json_is_malformed() {
    let body = "data: {\"choices\":[{\"delta\"\n\ndata: [DONE]\n\n";
    assert!(matches!(run(body).0, Err(StreamError::Malformed(_))));
}

#[test]
fn fields_the_reader_does_not_know_are_ignored_as_the_sse_spec_says() {
    let body = "hello there\nid: 7\nretry: 100\nx-custom: {not json\n\n\
                data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
                event: message\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n\
                data: [DONE]\n\n";
    assert_eq!(run(body).0.unwrap().content.as_deref(), Some("ab"));
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
fn a_passed_deadline_ends_the_stream_as_a_timeout() {
    let body = ": keep-alive\n\n".repeat(10);
    let past = Some(std::time::Instant::now());
    let err = read_stream_until(body.as_bytes(), &mut |_| {}, past).unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(!err.to_string().contains("malformed"), "{err}");
}

#[test]
fn timings_without_cache_n_take_the_counts_from_usage() {
    // Regression: a `timings` without `cache_n` (other builds and servers) failed the
    // whole answer as malformed.
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
                data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}],\
                \"timings\":{\"prompt_n\":5,\"predicted_n\":2,\"prompt_ms\":1.0},\
                \"usage\":{\"prompt_tokens\":45,\"completion_tokens\":4,\"total_tokens\":49,\
                \"prompt_tokens_details\":{\"cached_tokens\":30}}}\n\ndata: [DONE]\n\n";
    let c = run(body).0.unwrap();
    assert_eq!(
        c.timings,
        Some(Tokens {
            cache_n: 30,
            prompt_n: 15,
            predicted_n: 4
        })
    );
}

#[test]
fn usage_alone_gives_the_counts() {
    let body = "data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}]}\n\n\
                data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3}}\n\n\
                data: [DONE]\n\n";
    let t = run(body).0.unwrap().timings.unwrap();
    assert_eq!((t.cache_n, t.prompt_n, t.predicted_n), (0, 10, 3));
}

#[test]
fn timings_without_cache_n_and_no_usage_count_what_they_have() {
    let body = "data: {\"choices\":[],\"timings\":{\"prompt_n\":7,\"predicted_n\":2}}\n\n\
                data: [DONE]\n\n";
    let t = run(body).0.unwrap().timings.unwrap();
    assert_eq!((t.cache_n, t.prompt_n, t.predicted_n), (0, 7, 2));
}

#[test]
fn an_error_field_is_the_servers_error_not_a_malformed_stream() {
    // Older llama.cpp wrote a failed task as `error: {json}`.
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
                error: {\"code\":500,\"message\":\"context shift is disabled\",\"type\":\"server_error\"}\n\n";
    match run(body).0 {
        Err(StreamError::Server {
            code,
            kind,
            message,
        }) => {
            assert_eq!(code, Some(500));
            assert_eq!(kind, "server_error");
            assert_eq!(message, "context shift is disabled");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_error_event_is_the_servers_error() {
    let body = "event: error\ndata: {\"error\":{\"code\":400,\"type\":\"exceed_context_size_error\",\"message\":\"full\"}}\n\n";
    match run(body).0 {
        Err(StreamError::Server { kind, message, .. }) => {
            assert_eq!(
                (kind.as_str(), message.as_str()),
                ("exceed_context_size_error", "full")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tool_calls_name_and_id_are_kept_from_its_first_fragment() {
    // Some servers repeat the name and id on every fragment; joining them made
    // `read_fileread_file`.
    let frag = |args: &str| {
        format!(
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"c1\",\
             \"type\":\"function\",\"function\":{{\"name\":\"read_file\",\"arguments\":{args:?}}}}}]}}}}]}}\n\n"
        )
    };
    let body = format!(
        "{}{}{}data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"\",\
         \"function\":{{\"name\":\"\",\"arguments\":\"}}\"}}}}]}}}}]}}\n\ndata: [DONE]\n\n",
        frag("{\"path\""),
        frag(":\"/x\""),
        frag("")
    );
    let (c, seen) = run(&body);
    let c = c.unwrap();
    assert_eq!(c.tool_calls.len(), 1);
    assert_eq!(c.tool_calls[0].id, "c1");
    assert_eq!(c.tool_calls[0].name, "read_file");
    assert_eq!(c.tool_calls[0].arguments, "{\"path\":\"/x\"}");
    assert!(seen[0].contains("Some(\"read_file\")"), "{seen:?}");
    assert!(
        seen[1..].iter().all(|d| !d.contains("read_file")),
        "{seen:?}"
    );
}

#[test]
fn reasoning_is_its_own_delta_and_not_part_of_the_text() {
    let body = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm, \"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"two\"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"content\":\"2\"}}]}\n\n\
                data: [DONE]\n\n";
    let (c, seen) = run(body);
    assert_eq!(c.unwrap().content.as_deref(), Some("2"));
    assert_eq!(
        seen,
        [
            r#"Reasoning("hmm, ")"#,
            r#"Reasoning("two")"#,
            r#"Content("2")"#
        ]
    );
}

#[test]
fn finish_reason_length_is_a_cut_answer() {
    let chunk = |reason: &str| {
        format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"a\"}}}}]}}\n\n\
             data: {{\"choices\":[{{\"finish_reason\":\"{reason}\",\"delta\":{{}}}}]}}\n\n\
             data: [DONE]\n\n"
        )
    };
    let cut = run(&chunk("length")).0.unwrap();
    assert_eq!(cut.finish.as_deref(), Some("length"));
    assert!(cut.cut());
    for reason in ["stop", "tool_calls"] {
        let c = run(&chunk(reason)).0.unwrap();
        assert_eq!(c.finish.as_deref(), Some(reason));
        assert!(!c.cut());
    }
    assert!(!run("data: [DONE]\n\n").0.unwrap().cut());
}

#[test]
fn tool_arguments_past_their_bound_are_refused_with_words() {
    // Regression: a server sending megabytes of arguments had them logged and replayed
    // every round.
    let piece = "x".repeat(60 * 1024);
    let frag = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{piece}\"}}}}]}}}}]}}\n\n"
    );
    let body = format!("{frag}{frag}data: [DONE]\n\n");
    let err = run(&body).0.unwrap_err();
    assert!(
        err.to_string().contains("arguments are over 65536 bytes"),
        "{err}"
    );
}
