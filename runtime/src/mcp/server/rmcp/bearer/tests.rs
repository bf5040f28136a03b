//! The checks of `BearerAuth`'s settings as it is made.

use super::BearerAuth;

fn auth(resource: &str) -> BearerAuth {
    BearerAuth::new(resource, |_| async { None })
}

#[test]
fn scopes_are_scope_tokens() {
    let auth = auth("https://tools.example.com/mcp")
        .scopes_supported(["orders:read", "a!#[]~"])
        .required_scopes(["orders:read"]);
    assert_eq!(auth.metadata()["scopes_supported"][1], "a!#[]~");
    for bad in ["", "two words", "say\"hi", "back\\slash", "ctl\u{7}"] {
        let refused = std::panic::catch_unwind(|| {
            auth_for_scopes(bad);
        });
        assert!(refused.is_err(), "{bad:?} taken");
    }
}

fn auth_for_scopes(scope: &str) -> BearerAuth {
    auth("https://tools.example.com/mcp").required_scopes([scope])
}

#[test]
fn the_metadata_url_keeps_the_resources_query_after_its_path() {
    let tenant = auth("https://tools.example.com/mcp?tenant=acme");
    assert_eq!(
        tenant.metadata_url(),
        "https://tools.example.com/.well-known/oauth-protected-resource/mcp?tenant=acme"
    );
    assert_eq!(
        tenant.metadata_path(),
        "/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        tenant.metadata()["resource"],
        "https://tools.example.com/mcp?tenant=acme"
    );
    let root = auth("https://tools.example.com/?tenant=acme");
    assert_eq!(
        root.metadata_url(),
        "https://tools.example.com/.well-known/oauth-protected-resource?tenant=acme"
    );
}

#[test]
fn a_resource_a_challenge_cannot_name_is_refused() {
    for bad in [
        "https://tools.example.com/mcp#part",
        "https://tools.example.com/m\"cp",
        "ftp://tools.example.com/mcp",
        "/mcp",
    ] {
        assert!(
            std::panic::catch_unwind(|| auth(bad)).is_err(),
            "{bad} taken"
        );
    }
}
