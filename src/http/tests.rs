use super::*;
use std::path::Path;

fn config(http: &str) -> Config {
    let text = format!(r#"{{"projectPath": "p", "http": {http}}}"#);
    match Config::from_str(&text, Path::new("/cfg/sdlc-config.json")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn no_address_means_no_server_and_the_flag_wins_over_the_file() {
    assert!(settings(None, &config("{}")).expect("ok").is_none());
    let cfg = config(r#"{"listen": "127.0.0.1:9000"}"#);
    let from_file = settings(None, &cfg).expect("ok").expect("some");
    assert_eq!(from_file.addr.port(), 9000);
    let from_flag = settings(Some("127.0.0.1:9001"), &cfg)
        .expect("ok")
        .expect("some");
    assert_eq!(from_flag.addr.port(), 9001);
    assert!(from_flag.token.is_none());
}

#[test]
fn off_loopback_without_a_token_is_refused_naming_the_key() {
    for addr in ["0.0.0.0:8080", "[::]:8080", "192.0.2.1:8080"] {
        let e = settings(Some(addr), &config("{}")).expect_err(addr);
        assert!(e.contains("http.tokenEnv"), "{e}");
    }
    let e = settings(Some("localhost:8080"), &config("{}")).expect_err("a name");
    assert!(e.contains("--http") && e.contains("127.0.0.1:8080"), "{e}");
    let unset = config(r#"{"tokenEnv": "SDLC_HTTP_TEST_TOKEN_NEVER_SET"}"#);
    let e = settings(Some("127.0.0.1:8080"), &unset).expect_err("unset variable");
    assert!(e.contains("SDLC_HTTP_TEST_TOKEN_NEVER_SET"), "{e}");
}

#[test]
fn a_bad_listen_address_is_a_config_error_naming_the_key() {
    let e = Config::from_str(
        r#"{"projectPath": "p", "http": {"listen": "8080"}}"#,
        Path::new("c.json"),
    )
    .expect_err("invalid");
    assert!(e.to_string().contains("http.listen"), "{e}");
}

#[test]
fn tokens_compare_whole_and_queries_decode() {
    assert!(same(b"abc", b"abc"));
    assert!(!same(b"abc", b"abd"));
    assert!(!same(b"abc", b"abcd"));
    let uri: Uri = "/api/events?after=w0%3A12&token=a%2Bb+c"
        .parse()
        .expect("uri");
    assert_eq!(query_value(&uri, "after").as_deref(), Some("w0:12"));
    assert_eq!(query_value(&uri, "token").as_deref(), Some("a+b c"));
    assert_eq!(query_value(&uri, "missing"), None);
}

#[test]
fn the_page_is_whole_and_loads_nothing_from_elsewhere() {
    let page = page::html();
    assert!(!page.contains("/*STYLE*/") && !page.contains("/*SCRIPT*/"));
    assert!(page.contains("<svg") && page.contains("id=\"state-Verify\""));
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
}
