use super::*;

fn parse(text: &str) -> Result<Config, String> {
    Config::parse(text, Path::new("/etc/b.toml")).map_err(|e| e.to_string())
}

#[test]
fn an_empty_file_is_the_specs_defaults() {
    let cfg = parse("").unwrap();
    assert_eq!(cfg, Config::default());
    assert_eq!(cfg.expect.n_ctx, 262_144);
    assert_eq!(cfg.compact.summarise, vec!["http_fetch".to_string()]);
    assert_eq!(cfg.memory.max_class, DataClass::Private);
    assert_eq!(cfg.channel.owner_class, DataClass::Private);
    assert_eq!(cfg.tools.http_fetch.guard_class, DataClass::Private);
    assert_eq!(cfg.honcho.max_class, DataClass::Private);
}

#[test]
fn the_label_keys_parse_and_a_bad_class_is_refused_by_name() {
    let cfg = parse(
        "[channel]\nowner_class = \"secret\"\n[tools.http_fetch]\nguard_class = \"public\"\n\
         [honcho]\nmax_class = \"public\"\n",
    )
    .unwrap();
    assert_eq!(cfg.channel.owner_class, DataClass::Secret);
    assert_eq!(cfg.tools.http_fetch.guard_class, DataClass::Public);
    assert_eq!(cfg.honcho.max_class, DataClass::Public);
    for (text, key) in [
        ("[channel]\nowner_class = \"mine\"\n", "owner_class"),
        ("[tools.http_fetch]\nguard_class = 1\n", "guard_class"),
        ("[honcho]\nmax_class = \"top\"\n", "max_class"),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(key), "{e}");
    }
}

#[test]
fn the_starter_config_parses() {
    let text = include_str!("../../../config/boxmaker.toml");
    let cfg = parse(text).unwrap();
    assert_eq!(cfg.session, "main");
}

// Regression: the starter said "every key below is the default" while two were not; its
// header now names those two, and this keeps the rest at their defaults.
#[test]
fn the_starter_config_is_the_default_but_for_the_two_keys_its_header_names() {
    let mut cfg = parse(include_str!("../../../config/boxmaker.toml")).unwrap();
    assert!(!cfg.memory.embed_model.as_os_str().is_empty());
    assert!(!cfg.tools.read_file.class.is_empty());
    cfg.memory.embed_model = Config::default().memory.embed_model;
    cfg.tools.read_file.class.clear();
    assert_eq!(cfg, Config::default());
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let e = parse("[llama]\nurll = \"http://x\"\n").unwrap_err();
    assert!(e.contains("urll"), "{e}");
    let e = parse("colour = 1\n").unwrap_err();
    assert!(e.contains("colour"), "{e}");
    let e = parse("[[tools.read_file.class]]\nprefix = \"/a\"\nclass = \"secret\"\nextra = 1\n")
        .unwrap_err();
    assert!(e.contains("extra"), "{e}");
}

#[test]
fn bad_values_are_refused_naming_the_key() {
    let cases = [
        ("[compact]\nthreshold = 1.5\n", "compact.threshold"),
        ("[compact]\nthreshold = \"x\"\n", "threshold"),
        ("session = \"Main\"\n", "session"),
        ("[memory]\nmax_class = \"top\"\n", "max_class"),
        ("[slots]\nmain = 1\nbackground = 1\n", "slots.background"),
        ("[llama]\nurl = \"ftp://x\"\n", "llama.url"),
        ("[loop]\nmax_rounds = 0\n", "loop.max_rounds"),
        (
            "[heartbeat]\nactive_hours = \"25:00-07:00\"\n",
            "heartbeat.active_hours",
        ),
        ("state_dir = \"rel\"\n", "state_dir"),
        ("[channel]\nsocket = \"\"\n", "channel.socket"),
        ("[memory]\nsocket = \"rel.sock\"\n", "memory.socket"),
        ("[baseline]\nsystem = \"p/system.md\"\n", "baseline.system"),
        ("[honcho]\ntoken_file = \"t\"\n", "honcho.token_file"),
        ("[llama]\nretries = \"three\"\n", "key `llama.retries`"),
        ("[compact]\nthreshold = \"x\"\n", "key `compact.threshold`"),
        ("[expect]\nn_ctx = -1\n", "n_ctx"),
        (
            "[compact]\nsummary_chars = 200001\n",
            "compact.summary_chars",
        ),
    ];
    for (text, key) in cases {
        let e = parse(text).unwrap_err();
        assert!(e.contains(key) && e.contains("/etc/b.toml"), "{text}: {e}");
    }
}

#[test]
fn prompts_sit_beside_the_system_prompt() {
    let cfg = parse("[baseline]\nsystem = \"/p/system.md\"\n").unwrap();
    assert_eq!(
        cfg.prompt_path("compact.md"),
        PathBuf::from("/p/compact.md")
    );
}

#[test]
fn active_hours_parse_to_minutes() {
    let cfg = parse("[heartbeat]\nactive_hours = \"08:30-22:00\"\n").unwrap();
    assert_eq!(cfg.active_hours(), Some((510, 1320)));
}

#[test]
fn the_notify_table_parses_and_bad_values_are_refused_naming_the_key() {
    let cfg = parse("").unwrap();
    assert!(cfg.notify.command.is_empty());
    assert_eq!(cfg.notify.max_class, DataClass::Private);
    assert_eq!(cfg.notify.timeout_s, 20);
    let cfg = parse(
        "[notify]\ncommand = [\"/usr/local/bin/push\", \"-q\"]\nmax_class = \"public\"\ntimeout_s = 5\n",
    )
    .unwrap();
    assert_eq!(cfg.notify.command, ["/usr/local/bin/push", "-q"]);
    assert_eq!(cfg.notify.max_class, DataClass::Public);
    assert_eq!(cfg.notify.timeout_s, 5);
    assert_eq!(cfg.notify.max_running, 4, "the default");
    assert!(cfg.notify.env.is_empty());
    let cfg = parse("[notify]\nmax_running = 2\nenv = [\"NTFY_TOPIC\", \"_X1\"]\n").unwrap();
    assert_eq!(cfg.notify.max_running, 2);
    assert_eq!(cfg.notify.env, ["NTFY_TOPIC", "_X1"]);
    for (text, key) in [
        ("[notify]\ntimeout_s = 0\n", "notify.timeout_s"),
        ("[notify]\ntimeout_s = 601\n", "notify.timeout_s"),
        ("[notify]\ncommand = [\"\"]\n", "notify.command"),
        ("[notify]\ncommand = \"/bin/push\"\n", "command"),
        ("[notify]\nmax_class = \"top\"\n", "max_class"),
        ("[notify]\nshell = true\n", "shell"),
        ("[notify]\nmax_running = 0\n", "notify.max_running"),
        ("[notify]\nmax_running = 65\n", "notify.max_running"),
        ("[notify]\nenv = [\"NTFY TOPIC\"]\n", "notify.env"),
        ("[notify]\nenv = [\"1X\"]\n", "notify.env"),
        ("[notify]\nenv = [\"\"]\n", "notify.env"),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn the_matrix_table_is_off_by_default_and_checked_when_on() {
    let cfg = parse("").unwrap();
    assert!(!cfg.matrix.on());
    assert_eq!(cfg.matrix.session, "main");
    assert_eq!(cfg.matrix.max_class, DataClass::Private);
    let on = "[matrix]\nhomeserver = \"http://127.0.0.1:8008\"\nuser_id = \"@box:ex.org\"\n\
              token_file = \"/run/t\"\nowners = [\"@me:ex.org\"]\nmax_class = \"public\"\n";
    let cfg = parse(on).unwrap();
    assert!(cfg.matrix.on());
    assert_eq!(cfg.matrix.owners, vec!["@me:ex.org".to_string()]);
    assert_eq!(cfg.matrix.max_class, DataClass::Public);
    let cases = [
        (
            "[matrix]\nhomeserver = \"matrix.org\"\n",
            "matrix.homeserver",
        ),
        ("[matrix]\nsession = \"Main\"\n", "matrix.session"),
        ("[matrix]\nowner = []\n", "owner"),
        ("[matrix]\nmax_class = \"top\"\n", "max_class"),
    ];
    for (text, key) in cases {
        let e = parse(text).unwrap_err();
        assert!(e.contains(key), "{text}: {e}");
    }
    let broken = [
        (on.replace("@box:ex.org", "box"), "matrix.user_id"),
        (on.replace("/run/t", "t"), "matrix.token_file"),
        (on.replace("[\"@me:ex.org\"]", "[]"), "matrix.owners"),
        (on.replace("@me:ex.org", "me"), "matrix.owners"),
        (on.replace("@me:ex.org", "@box:ex.org"), "matrix.owners"),
    ];
    for (text, key) in broken {
        let e = parse(&text).unwrap_err();
        assert!(e.contains(key), "{text}: {e}");
    }
}

// Regression: an integer too large for i64 was refused by the TOML reader before serde knew
// the key, as `number too large to fit in target type (line 2)`, with no key named.
#[test]
fn an_integer_too_large_for_i64_is_refused_naming_its_key_and_line() {
    let cases = [
        (
            "[heartbeat]\nevery_s = 18446744073709551615\n",
            "key `heartbeat.every_s`",
            "(line 2)",
        ),
        (
            "session = \"main\"\n\n[llama]\nslot_keep_days = 9223372036854775808\n",
            "key `llama.slot_keep_days`",
            "(line 4)",
        ),
        (
            "[channel]\nallow_uids = [1, 99999999999999999999]\n",
            "key `channel.allow_uids",
            "(line 2)",
        ),
    ];
    for (text, key, line) in cases {
        let e = parse(text).unwrap_err();
        assert!(
            e.contains(key) && e.contains(line) && e.contains("too large"),
            "{text}: {e}"
        );
    }
}

#[test]
fn a_syntax_error_names_no_key() {
    let e = parse("[heartbeat]\nevery_s = = 3\n").unwrap_err();
    assert!(!e.contains("key `"), "{e}");
    assert!(e.contains("(line 2)"), "{e}");
}

// Regression: a `compact.summarise` naming no tool (a typo such as "htp_fetch") and a
// `max_bytes` of 0 for read_file or http_fetch were accepted without a word; the typo left
// nothing summarised and 0 made every read and fetch fail.
#[test]
fn an_unknown_tool_to_summarise_and_a_zero_max_bytes_are_refused_naming_key_and_value() {
    let cases = [
        (
            "[compact]\nsummarise = [\"http_fetch\", \"htp_fetch\"]\n",
            "key `compact.summarise`",
            "\"htp_fetch\"",
        ),
        (
            "[tools.read_file]\nmax_bytes = 0\n",
            "key `tools.read_file.max_bytes`",
            "got 0",
        ),
        (
            "[tools.http_fetch]\nmax_bytes = 0\n",
            "key `tools.http_fetch.max_bytes`",
            "got 0",
        ),
    ];
    for (text, key, value) in cases {
        let e = parse(text).unwrap_err();
        assert!(e.contains(key) && e.contains(value), "{text}: {e}");
    }
    let every_tool =
        "[compact]\nsummarise = [\"read_file\", \"http_fetch\", \"recall\", \"remind\"]\n";
    assert_eq!(parse(every_tool).unwrap().compact.summarise.len(), 4);
    assert!(parse("[compact]\nsummarise = []\n").is_ok());
    assert!(parse("[tools.read_file]\nmax_bytes = 1\n[tools.http_fetch]\nmax_bytes = 1\n").is_ok());
}

/// Regression: `llama.url`, `honcho.url` and `matrix.homeserver` were checked only for
/// their `http://` or `https://` prefix, so `http://` and `http://exa mple:99999/` were
/// taken at start and failed later as a DNS error or an unparsable url naming no key.
#[test]
fn a_base_url_without_a_well_formed_host_and_port_is_refused_naming_its_key() {
    let matrix_on = |homeserver: &str| {
        format!(
            "[matrix]\nhomeserver = {homeserver:?}\nuser_id = \"@box:ex.org\"\n\
             token_file = \"/run/t\"\nowners = [\"@me:ex.org\"]\n"
        )
    };
    for (url, why) in [
        ("http://", "it has no host"),
        ("http://exa mple:99999/", "it holds ' '"),
        (
            "http://example:99999/",
            "port \"99999\" is not a number from 1 to 65535",
        ),
    ] {
        for (text, key) in [
            (format!("[llama]\nurl = {url:?}\n"), "key `llama.url`"),
            (format!("[honcho]\nurl = {url:?}\n"), "key `honcho.url`"),
            (matrix_on(url), "key `matrix.homeserver`"),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(
                e.contains(key) && e.contains(&format!("{url:?}")) && e.contains(why),
                "{text}: {e}"
            );
        }
    }
    for url in [
        "http://127.0.0.1:8080",
        "https://matrix.example.org",
        "http://[::1]:8008/",
        "http://localhost:8080/base",
    ] {
        let cfg = parse(&format!(
            "[llama]\nurl = {url:?}\n[honcho]\nurl = {url:?}\n"
        ))
        .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(cfg.llama.url, url);
        let cfg = parse(&matrix_on(url)).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(cfg.matrix.homeserver, url);
    }
}
