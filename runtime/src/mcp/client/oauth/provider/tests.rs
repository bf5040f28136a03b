//! Tests of `oauth/provider`.

use super::*;

/// A machine's login for a server at `tools.example.com`.
fn machine() -> OAuthProvider {
    let url = "https://tools.example.com/mcp";
    let oauth = OAuth::client_credentials("machine", "secret");
    let http = OAuthHttp::new(url, &oauth, reqwest::Client::builder).unwrap();
    OAuthProvider::new(url.into(), http, oauth, false, Arc::default())
}

/// A server that refuses every token at once is given up on after the
/// bound; a client whose tokens each served a while logs in for as
/// long as it runs.
#[tokio::test(start_paused = true)]
async fn logins_are_bounded_in_a_row_not_for_good() {
    let provider = machine();
    let mut session = Session::default();
    for _ in 0..10 {
        provider
            .count(&mut session)
            .expect("a token that served an hour");
        tokio::time::advance(std::time::Duration::from_secs(3600)).await;
    }
    for _ in 0..3 {
        provider.count(&mut session).expect("within the bound");
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
    }
    let refused = provider.count(&mut session).expect_err("past the bound");
    assert_eq!(refused.reason(), Some(reasons::AUTHORIZATION_FAILED));
}

/// A pinned issuer over plain HTTP to another machine, or with a query, a
/// fragment or a user, is refused before anything is asked of it: a
/// network between could answer for it.
#[tokio::test]
async fn a_pinned_issuer_is_an_https_url_and_nothing_else() {
    let http = reqwest::Client::new();
    for pinned in [
        "http://sso.corp",
        "https://sso.corp/?tenant=1",
        "https://sso.corp/#x",
        "https://me:pw@sso.corp",
        "sso.corp",
    ] {
        // The server's discovery led elsewhere too: the shape is refused
        // first, and the issuer given is quoted nowhere.
        let refused = pinned::metadata(&http, pinned, Some("https://sso.corp"), false)
            .await
            .expect_err(pinned);
        assert_eq!(refused.reason(), Some(reasons::AUTHORIZATION_FAILED));
        assert!(
            refused.message().contains("https URL"),
            "{}",
            refused.message()
        );
    }
}

/// A client let send credentials over plain HTTP to another machine
/// (`insecure_credentials`) may pin an issuer there too; the rest of an
/// issuer's shape holds all the same.
#[tokio::test]
async fn an_insecure_client_may_pin_a_plain_http_issuer_and_nothing_else() {
    let http = reqwest::Client::new();
    // Past the shape: refused only because discovery led elsewhere.
    let refused = pinned::metadata(&http, "http://sso.corp", Some("https://other.corp"), true)
        .await
        .expect_err("discovery led elsewhere");
    assert_eq!(refused.reason(), Some(reasons::AUTHORIZATION_FAILED));
    assert!(
        !refused.message().contains("https URL"),
        "{}",
        refused.message()
    );
    for pinned in [
        "ftp://sso.corp",
        "http://sso.corp/?tenant=1",
        "http://me:pw@sso.corp",
        "sso.corp",
    ] {
        let refused = pinned::metadata(&http, pinned, Some(pinned), true)
            .await
            .expect_err(pinned);
        assert!(
            refused.message().contains("https URL"),
            "{pinned}: {}",
            refused.message()
        );
    }
}

/// A refusal quoting a credential where the text is cut to length: no part
/// of the credential is left, as none is of one quoted whole.
#[test]
fn a_refusal_cut_to_length_keeps_no_part_of_a_credential() {
    const TOKEN: &str = "rfr-3b7c-d2a9-1f40-refresh-token";
    let provider = machine();
    provider.sent.credential(&Arc::from(TOKEN));
    for at in [0, 460, 470, 480, 490, 500] {
        let text = format!("{}{TOKEN} was refused", "x".repeat(at));
        let envelope = provider.failed(&AuthError::TokenRefreshFailed(text));
        let shown = serde_json::to_string(&envelope).unwrap();
        for part in [&TOKEN[..8], &TOKEN[TOKEN.len() - 8..]] {
            assert!(!shown.contains(part), "{at}: {shown}");
        }
    }
}

/// A pinned issuer whose metadata never ends is read no further than the
/// bound: the login fails saying so, with no more than the bound kept.
#[tokio::test]
async fn a_pinned_issuers_endless_metadata_is_read_no_further_than_the_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    /// `{"issuer": "` and then spaces, for as long as they are read.
    async fn endless(mut stream: tokio::net::TcpStream) -> std::io::Result<()> {
        let mut request = [0; 4096];
        let _ = stream.read(&mut request).await?;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(br#"{"issuer": ""#).await?;
        let spaces = vec![b' '; 64 * 1024];
        loop {
            stream.write_all(&spaces).await?;
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pinned = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(endless(stream));
        }
    });
    let http = reqwest::Client::new();
    let read = pinned::metadata(&http, &pinned, Some(&pinned), false);
    // Unbounded, the read never ends; the bound, not this, must end it.
    let refused = tokio::time::timeout(std::time::Duration::from_secs(60), read)
        .await
        .expect("the read stops at the bound")
        .expect_err("no metadata within the bound");
    assert!(
        refused.message().contains("over 262144 bytes"),
        "{}",
        refused.message()
    );
}
