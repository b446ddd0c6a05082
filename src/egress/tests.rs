use super::*;

#[test]
fn the_allowlist_lets_through_exact_hosts_and_the_subdomains_of_a_wildcard_only() {
    let list = Allowlist::new(["API.example.com", "*.cdn.test", "127.0.0.1", "::1"]);
    for host in [
        "api.example.com",
        "Api.Example.Com",
        "api.example.com.",
        "a.cdn.test",
        "x.y.cdn.test",
        "127.0.0.1",
        "[::1]",
    ] {
        assert!(list.allows(host), "{host}");
    }
    for host in [
        "example.com",
        "xapi.example.com",
        "cdn.test",
        "evilcdn.test",
        "127.0.0.2",
        "api.example.com.evil",
        "",
    ] {
        assert!(!list.allows(host), "{host}");
    }
}

#[test]
fn a_key_is_never_printed() {
    let route = ModelRoute {
        upstream: "https://api.anthropic.com".into(),
        header: KeyHeader::XApiKey,
        key: Secret::new("sk-ant-visible".into()),
    };
    assert!(!format!("{route:?}").contains("visible"));
    assert_eq!(
        KeyHeader::Bearer.header("k"),
        ("authorization", "Bearer k".to_string())
    );
}
