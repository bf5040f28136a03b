//! Where an HTTP client reaches its server, and what its URL carries that is
//! a credential: user info (`https://user:password@host/mcp`), sent as HTTP
//! Basic authentication and never in the URL, and the values of its query
//! (`?api_key=…`), sent in the URL as given. Both are the client's
//! credentials like its headers: never printed, masked in every text that
//! comes back, kept off plain HTTP to another machine.

use std::sync::Arc;

use base64::Engine;
use percent_encoding::percent_decode_str;
use reqwest::Url;
use reqwest::header::HeaderValue;

use crate::envelope::ErrorEnvelope;
use crate::mcp::client::failure::misconfigured;
use crate::redact::REDACTED;

/// An HTTP endpoint as given, taken apart.
#[derive(Debug)]
pub(crate) struct Address {
    /// The URL requests go to: the one given, without its user info.
    pub(crate) url: Arc<str>,
    /// `Basic …`, from the user info, to send as `Authorization`.
    pub(crate) basic: Option<HeaderValue>,
    /// The texts of the URL that are secrets, as written and as decoded:
    /// the user's name and password, the query's values.
    pub(crate) secrets: Vec<Arc<str>>,
}

impl Address {
    /// `given`, taken apart.
    ///
    /// # Errors
    ///
    /// An `other` envelope, reason `CLIENT_MISCONFIGURED`, when `given` is
    /// not an `http://` or `https://` URL. It does not quote `given`.
    pub(crate) fn parse(given: &str) -> Result<Self, ErrorEnvelope> {
        let mut url = Url::parse(given)
            .map_err(|error| misconfigured(format!("the endpoint is not a URL: {error}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(misconfigured(format!(
                "the endpoint `{}` is not an http:// or https:// URL",
                shown(given)
            )));
        }
        let mut secrets = Vec::new();
        let mut secret = |text: &str| {
            if !text.is_empty() && !secrets.iter().any(|known: &Arc<str>| &**known == text) {
                secrets.push(Arc::from(text));
            }
        };
        for value in query_values(&url) {
            secret(&value);
        }
        let basic = if url.username().is_empty() && url.password().is_none() {
            None
        } else {
            // As reqwest would send it, decoded: `name:password`.
            let name = percent_decode_str(url.username()).decode_utf8_lossy();
            let password = url.password().unwrap_or_default();
            let decoded = percent_decode_str(password).decode_utf8_lossy();
            for text in [url.username(), &name, password, &decoded] {
                secret(text);
            }
            let pair =
                base64::engine::general_purpose::STANDARD.encode(format!("{name}:{decoded}"));
            let mut value = HeaderValue::from_str(&format!("Basic {pair}"))
                .expect("base64 is always a header value");
            value.set_sensitive(true);
            secret(value.to_str().unwrap_or_default());
            // Setting them cannot fail on an http(s) URL, which has a host.
            let _ = url.set_username("");
            let _ = url.set_password(None);
            Some(value)
        };
        Ok(Address {
            url: Arc::from(String::from(url)),
            basic,
            secrets,
        })
    }
}

/// The values of `url`'s query that are taken for credentials, as written
/// and as decoded: those under a key that names one (`api_key`, `token`,
/// `sig`, …), and any long enough to be one (8 characters or more), a
/// bare one without a key (`?sk_live_…`) too. Others — `v=2`,
/// `format=json`, a bare `flag` — are not masked in every text that comes
/// back, where they would take out every `2`; all with a key are printed
/// `[redacted]`, and bare ones long enough to be a credential.
fn query_values(url: &Url) -> Vec<String> {
    let decode = |text: &str| {
        let spaced = text.replace('+', " ");
        percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
    };
    let mut values = Vec::new();
    let pairs = url.query().unwrap_or_default().split('&');
    for (key, written) in pairs.map(|pair| pair.split_once('=').unwrap_or(("", pair))) {
        let (key, value) = (decode(key).to_ascii_lowercase(), decode(written));
        let named = CREDENTIAL_KEYS.iter().any(|word| key.contains(word));
        if named || value.chars().count() >= 8 {
            values.push(written.to_owned());
            values.push(value);
        }
    }
    values
}

/// Words that, in a query's key, name a credential.
const CREDENTIAL_KEYS: [&str; 9] = [
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "auth",
    "sig",
    "credential",
    "session",
];

/// `given` as printed — in a `Debug`, a log line, an error — its user info
/// and the values of its query `[redacted]`, without its fragment.
pub(crate) fn shown(given: &str) -> String {
    let Ok(mut url) = Url::parse(given) else {
        return "[not a URL]".to_owned();
    };
    let had_user = !url.username().is_empty() || url.password().is_some();
    let query = url.query().map(|query| {
        (query.split('&'))
            .map(|pair| match pair.split_once('=') {
                Some((key, value)) if !value.is_empty() => format!("{key}={REDACTED}"),
                // A bare value long enough to be a key.
                None if pair.chars().count() >= 8 => REDACTED.to_owned(),
                _ => pair.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    let mut text = String::from(url);
    if had_user && let Some(start) = text.find("://") {
        text.insert_str(start + 3, &format!("{REDACTED}@"));
    }
    if let Some(query) = query {
        text.push('?');
        text.push_str(&query);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_leaves_the_url_for_a_basic_header() {
        let address = Address::parse("https://ada:p%40ss@tools.example.com/mcp").unwrap();
        assert_eq!(&*address.url, "https://tools.example.com/mcp");
        let basic = address.basic.unwrap();
        assert!(basic.is_sensitive());
        // base64("ada:p@ss")
        assert_eq!(basic.to_str().unwrap(), "Basic YWRhOnBAc3M=");
        for secret in ["ada", "p%40ss", "p@ss", "Basic YWRhOnBAc3M="] {
            assert!(
                address.secrets.iter().any(|known| &**known == secret),
                "{secret} in {:?}",
                address.secrets
            );
        }
    }

    #[test]
    fn query_values_stay_in_the_url_and_credentials_among_them_are_secrets() {
        let given = "https://tools.example.com/mcp?api_key=k%2By+z&flag&empty=&v=2&format=json&tenant=acme-corp-eu&Sig=ab&sk_live_51Hx";
        let address = Address::parse(given).unwrap();
        assert_eq!(&*address.url, given);
        assert!(address.basic.is_none());
        let secrets: Vec<&str> = address.secrets.iter().map(|s| &**s).collect();
        assert_eq!(
            secrets,
            ["k%2By+z", "k+y z", "acme-corp-eu", "ab", "sk_live_51Hx"]
        );
    }

    #[test]
    fn what_is_printed_names_no_secret() {
        assert_eq!(
            shown(
                "https://ada:pw@tools.example.com:8443/mcp?api_key=k1&tenant=acme&flag&sk_live_51Hx#top"
            ),
            "https://[redacted]@tools.example.com:8443/mcp?api_key=[redacted]&tenant=[redacted]&flag&[redacted]"
        );
        assert_eq!(
            shown("http://127.0.0.1:8080/mcp"),
            "http://127.0.0.1:8080/mcp"
        );
        assert_eq!(shown("not a url with s3cret"), "[not a URL]");
    }

    #[test]
    fn only_http_urls_are_endpoints() {
        for given in ["ftp://ada:pw@host/mcp", "not a url pw", "file:///tmp/mcp"] {
            let refused = Address::parse(given).unwrap_err();
            assert_eq!(
                refused.reason(),
                Some(crate::reasons::CLIENT_MISCONFIGURED),
                "{given}"
            );
            assert!(!refused.message().contains("pw"), "{refused:?}");
        }
    }
}
