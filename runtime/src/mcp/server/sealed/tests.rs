//! Tests of the module above.

use serde_json::json;

use super::*;

const ARGUMENTS: &str = r#"{"order":"T-620","amount":620}"#;

fn seal() -> Seal {
    Seal::new(&[7u8; 32], Duration::from_secs(15 * 60)).expect("a 32-byte key")
}

fn approval_key() -> String {
    format!("{APPROVAL_KEY_PREFIX}cap@0")
}

fn yes() -> Value {
    json!({"action": "accept", "content": {}})
}

fn alice() -> Caller {
    Caller::new("alice", ["refunds:write", "orders:read"])
}

/// A state sealed for one token opens for a token of the same subject that
/// grants as much or more, not for one that grants less, nor for a call
/// without a token.
#[test]
fn a_state_opens_only_for_a_token_that_grants_what_its_own_did() {
    let seal = seal();
    let arguments: Value = serde_json::from_str(ARGUMENTS).unwrap();
    let call = ("shop", "refund");
    let state = State::new(vec![approval_key()], BTreeMap::new(), 0);
    let sealed = seal.seal(state, call, &arguments, Some(&alice())).unwrap();
    let more = Caller::new("alice", ["refunds:write", "orders:read", "admin"]);
    let less = Caller::new("alice", ["refunds:write"]);
    assert!(seal.open(&sealed, call, &arguments, Some(&alice())).is_ok());
    assert!(seal.open(&sealed, call, &arguments, Some(&more)).is_ok());
    assert!(seal.open(&sealed, call, &arguments, Some(&less)).is_err());
    assert!(seal.open(&sealed, call, &arguments, None).is_err());
    // The client reads the state (it is signed, not encrypted): the scopes
    // are in it as keyed digests, never by name.
    let payload: Value = (seal.codec)
        .open_json_with(
            &sealed,
            &bound_to((call.0, call.1, &arguments, Some("alice")), true),
        )
        .unwrap();
    assert_eq!(
        payload["scopes"].as_array().map(Vec::len),
        Some(2),
        "{payload}"
    );
    assert!(!payload.to_string().contains("orders"), "{payload}");
    // A replica of an earlier release, which would not check them, binds
    // a state without the mark: it does not open this one.
    let earlier = bound_to((call.0, call.1, &arguments, Some("alice")), false);
    assert!(
        seal.codec
            .open_json_with::<Value>(&sealed, &earlier)
            .is_err()
    );
    // Nor does a state that carries scopes bound without the mark open.
    let options = SealOptions::new().associated_data(&earlier).ttl(seal.ttl);
    let unmarked = seal.codec.seal_json_with(&payload, &options).unwrap();
    assert!(
        seal.open(&unmarked, call, &arguments, Some(&alice()))
            .is_err()
    );
    // Sealed without a token, it opens for no token only.
    let state = State::new(vec![approval_key()], BTreeMap::new(), 0);
    let open = seal.seal(state, call, &arguments, None).unwrap();
    assert!(seal.open(&open, call, &arguments, None).is_ok());
    assert!(seal.open(&open, call, &arguments, Some(&alice())).is_err());
}

/// `state` sealed for Alice's refund, then opened again.
fn round_trip(seal: &Seal, state: State) -> State {
    let arguments: Value = serde_json::from_str(ARGUMENTS).unwrap();
    let sealed = seal
        .seal(state, ("shop", "refund"), &arguments, Some(&alice()))
        .unwrap();
    assert!(
        (seal.open(&sealed, ("hr", "refund"), &arguments, Some(&alice()))).is_err(),
        "another service's"
    );
    seal.open(&sealed, ("shop", "refund"), &arguments, Some(&alice()))
        .expect("it opens for the same call and caller")
}

#[test]
fn a_yes_lasts_as_long_as_the_state_it_was_given_in() {
    let seal = seal();
    let mut asking = round_trip(&seal, State::new(vec![approval_key()], BTreeMap::new(), 0));
    let now = now_ms();
    let (answers, until) = asking.take_answers(BTreeMap::from([(approval_key(), yes())]), now);
    assert!(approves(&answers));
    assert_eq!(until, asking.expires_ms);
    // A no is not an approval, and has no end.
    let mut again = round_trip(&seal, State::new(vec![approval_key()], BTreeMap::new(), 0));
    let no = json!({"action": "decline"});
    let (answers, until) = again.take_answers(BTreeMap::from([(approval_key(), no)]), now);
    assert!(!approves(&answers));
    assert_eq!(until, 0);
}

#[test]
fn rounds_that_ask_again_do_not_make_a_yes_last_longer() {
    let seal = seal();
    // A yes given in a round whose state ends a minute from now; the
    // tool then asks a form, round after round, never answered.
    let ends = now_ms() + 60_000;
    let mut answers = BTreeMap::from([(approval_key(), yes())]);
    let mut until = ends;
    for _ in 0..5 {
        let state = State::new(vec!["form".to_owned()], answers, until);
        let mut opened = round_trip(&seal, state);
        // Each state opens for the seal's 15 minutes (a slow person
        // filling the form is not refused), and its yes keeps its end.
        assert!(opened.expires_ms > ends + 13 * 60_000);
        let (taken, next) = opened.take_answers(BTreeMap::new(), now_ms());
        assert!(approves(&taken));
        assert_eq!(next, ends);
        (answers, until) = (taken.into_iter().collect(), next);
    }
    // Past its end, the round that opens the state leaves the yes out,
    // and keeps the other answers: the guard asks again. A yes to
    // another approval, given in that round, counts until that round's
    // state ends.
    let form = json!({"action": "accept", "content": {"reason": "duplicate"}});
    answers.insert("form".to_owned(), form);
    let other = format!("{APPROVAL_KEY_PREFIX}finance@1");
    let asked = vec!["next".to_owned(), other.clone()];
    let mut late = round_trip(&seal, State::new(asked, answers, until));
    let (taken, next) = late.take_answers(BTreeMap::from([(other.clone(), yes())]), ends + 1);
    assert!(!taken.contains_key(&approval_key()), "{taken:?}");
    assert!(taken.contains_key("form") && taken.contains_key(&other));
    assert_eq!(next, late.expires_ms);
}

#[test]
fn a_yes_whose_time_is_up_is_not_sealed_again() {
    let seal = seal();
    let form = json!({"action": "accept", "content": {"reason": "duplicate"}});
    let answers = BTreeMap::from([(approval_key(), yes()), ("form".to_owned(), form)]);
    let state = State::new(vec!["next".to_owned()], answers, now_ms() - 1);
    let mut opened = round_trip(&seal, state);
    assert!(!opened.answers.contains_key(&approval_key()));
    let (taken, until) = opened.take_answers(BTreeMap::new(), now_ms());
    assert!(!approves(&taken), "{taken:?}");
    assert!(taken.contains_key("form"), "the other answers stay");
    assert_eq!(until, 0);
}

/// A round that brings no yes is spent once; where the record is full
/// of the caller's other states it is let through unrecorded, which a
/// round that brings a yes never is.
#[tokio::test]
async fn a_plain_round_opens_once_and_a_full_record_stops_only_approvals() {
    let fresh = seal();
    let state = round_trip(
        &fresh,
        State::new(vec!["confirm".into()], BTreeMap::new(), 0),
    );
    assert!(
        fresh.spend(&state, Some("alice"), false).await,
        "its first use"
    );
    assert!(
        !fresh.spend(&state, Some("alice"), false).await,
        "used already"
    );

    // Plain rounds fill a record of their own: past it they are let
    // through, and an approving round is still taken.
    let full = seal();
    let fill = |approving: bool| {
        let full = &full;
        async move {
            for n in 0.. {
                let redeemed = (full.redeemed)
                    .redeem(&format!("other-{n}"), full.ttl, 0, Some("alice"), approving)
                    .await;
                if redeemed == Redeemed::Full {
                    break;
                }
            }
        }
    };
    fill(false).await;
    let plain = round_trip(
        &full,
        State::new(vec!["confirm".into()], BTreeMap::new(), 0),
    );
    assert!(
        full.spend(&plain, Some("alice"), false).await,
        "let through"
    );
    let approving =
        |seal: &Seal| round_trip(seal, State::new(vec![approval_key()], BTreeMap::new(), 0));
    let first = approving(&full);
    assert!(
        full.spend(&first, Some("alice"), true).await,
        "a yes is taken"
    );
    // Approving rounds past their own record are refused.
    fill(true).await;
    let second = approving(&full);
    assert!(
        !full.spend(&second, Some("alice"), true).await,
        "a yes past the record"
    );
}

/// A question's digest is of all it shows: the same form in the same words
/// is the same question, made anew or kept for its type; other words, or
/// one more choice in the form, are another. A digest sealed by the release
/// before (of the whole request) is still read as it was made, and a
/// sampling request's is still of the whole request.
#[test]
fn a_question_is_known_by_its_words_and_its_form() {
    let form = |choices: &[&str]| {
        json!({"type": "object", "properties": {
            "rows": {"type": "string", "title": "Rows", "enum": choices}}})
    };
    let ask = |message: &str, choices: &[&str]| {
        Question::form("confirm", message, form(choices)).expect("a form MCP allows")
    };
    let asked = ask("Delete 3 rows?", &["all", "none"]);
    let digest = asked_as(&asked);
    assert!(digest.starts_with(OF_FORM), "{digest}");
    assert_eq!(digest, asked_as(&ask("Delete 3 rows?", &["all", "none"])));
    assert!(is_asked_as(&asked, &digest));
    for other in [
        ask("Delete 3000 rows?", &["all", "none"]),
        ask("Delete 4 rows?", &["all", "none"]),
        ask("Delete 3 rows?", &["all", "none", "some"]),
        ask("Delete 3 rows?", &["all", "nine"]),
        ask("Delete 3 rows", &["all", "none"]),
    ] {
        assert_ne!(asked_as(&other), digest);
        assert!(!is_asked_as(&other, &digest));
    }

    // The encoding, pinned: a change to it is a change of what states in
    // flight hold, to be made on purpose (with a mark of its own).
    assert_eq!(digest, PINNED_FORM_DIGEST);

    // Sealed by the release before: the digest of the request as sent.
    let before = as_sent(asked.request()).expect("a request writes out");
    assert!(!before.starts_with(OF_FORM));
    assert!(is_asked_as(&asked, &before));
    assert!(!is_asked_as(
        &ask("Delete 3000 rows?", &["all", "none"]),
        &before
    ));
    assert!(!is_asked_as(&asked, &format!("{OF_FORM}{before}")));

    // A form kept for its type: the same digest, round after round.
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Name {
        name: String,
    }
    let kept = Question::elicit::<Name>("name", "Your name?").expect("a form");
    assert!(asked_as(&kept).starts_with(OF_FORM));
    assert_ne!(asked_as(&kept), digest);
    // The digest its kept form keeps is the one a form made anew from the
    // same schema gets.
    let schema = rmcp::model::ElicitationSchema::from_type::<Name>().expect("a form");
    let schema = serde_json::to_value(schema).expect("a schema writes out");
    let anew = Question::form("name", "Your name?", schema).expect("a form");
    assert_eq!(asked_as(&kept), asked_as(&anew));

    // Not a form: the request as sent, as before; and a form's digest is
    // not another kind's under the same key.
    let roots = Question::roots("confirm");
    let sent = as_sent(roots.request()).expect("a request writes out");
    assert_eq!(asked_as(&roots), sent);
    assert!(is_asked_as(&roots, &sent));
    assert!(!is_asked_as(&roots, &digest) && !is_asked_as(&asked, &sent));
    assert!(!is_asked_as(&asked, UNREADABLE) && !is_asked_as(&roots, UNREADABLE));
}

/// `a_question_is_known_by_its_words_and_its_form`'s first question's digest.
const PINNED_FORM_DIGEST: &str = "form:3986768900dcab0fc081d0e3c15a9cd1";
