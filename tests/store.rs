//! The store's contract, the same on every backend: the in-process store,
//! a SQLite file (two stores opened on one file stand for two replicas),
//! and Postgres when `TOOL_ENVELOPE_TEST_POSTGRES` names one
//! (`scripts/test-postgres.sh` starts Debian's PostgreSQL and sets it).
//!
//! Every "decide once" promise is tried the way two replicas would break
//! it: many deciders, claimers and redeemers at once, exactly one wins.

use std::sync::Arc;

use serde_json::json;
use tool_envelope::store::{
    self, ApprovalRecord, ApprovalState, AuditEntry, Decision, EscalationRecord, EscalationState,
    MemoryStore, Store, TaskRecord, TaskState, TaskUpdate,
};

const MINUTE: i64 = 60_000;

fn approval(digest: &str, expires_ms: i64) -> ApprovalRecord {
    ApprovalRecord::new(
        digest,
        "cap@0",
        "refund",
        json!({"order_id": "ord-1", "amount": 620}),
        json!({"errorCategory": "business", "isRetryable": false}),
        Some("agent".to_owned()),
        "refunds:approve",
        expires_ms,
    )
}

/// The holder renews a task's lease on one replica, over and over, while it
/// finishes the task on the other: whatever the order, the task stays
/// finished with its result — no renewal writes back a task it read before
/// the finish.
async fn renewals_never_undo_a_finish(replicas: &[Arc<dyn Store>]) {
    let now = store::now_ms();
    let mut races = Vec::new();
    for n in 0..30 {
        let task = TaskRecord::new("slow", json!({"n": n}), Some("racer".into()), 10 * MINUTE)
            .held_by("replica-a", now + MINUTE);
        assert!(replicas[0].create_task(&task, u64::MAX).await.unwrap());
        let renewing = Arc::clone(&replicas[n % replicas.len()]);
        let finishing = Arc::clone(&replicas[(n + 1) % replicas.len()]);
        let id = task.id.clone();
        races.push(tokio::spawn(async move {
            let renewals = {
                let id = id.clone();
                tokio::spawn(async move {
                    let mut renew = TaskUpdate::now();
                    renew.lease_until_ms = Some(now + 2 * MINUTE);
                    // Until the task is found finished (a bounded number
                    // of times: a task brought back to work is renewed for
                    // ever).
                    for _ in 0..500 {
                        match renewing.update_task(&id, "replica-a", &renew).await {
                            Ok(true) => {}
                            Ok(false) => break,
                            Err(error) => assert!(error.to_string().contains("too often")),
                        }
                    }
                })
            };
            tokio::task::yield_now().await;
            let done = TaskUpdate::finish(TaskState::Completed, Some(json!({"n": n})));
            // A store may answer that the task changed too often while it
            // tried: the holder tries again, as the runner's next pass would.
            loop {
                match finishing.update_task(&id, "replica-a", &done).await {
                    Ok(finished) => break assert!(finished, "the holder's finish refused"),
                    Err(error) => assert!(error.to_string().contains("too often"), "{error}"),
                }
            }
            renewals.await.unwrap();
            let read = finishing.task(&id).await.unwrap().unwrap();
            assert_eq!(read.state, TaskState::Completed, "a renewal undid a finish");
            assert_eq!(
                read.result,
                Some(json!({"n": n})),
                "a renewal lost a result"
            );
        }));
    }
    for race in races {
        race.await.unwrap();
    }
}

/// Every promise of one store, in order.
async fn contract(store: Arc<dyn Store>) {
    tasks(&*store).await;
    approvals(&*store).await;
    single_use(&*store).await;
    escalations_and_audit(&*store).await;
    bounds_per_service(&*store).await;
    a_backlog_expires_whole(&*store).await;
    a_yes_not_run_in_time_expires_unrun(&*store).await;
    listed_newest_or_oldest_first(&*store).await;
    an_escalation_is_kept_once_by_its_id(&*store).await;
    notices(&*store).await;
}

/// A notice is claimed when it is due and its approval still waits, by
/// one claimer until its claim runs out, and never again once sent: not
/// before it is due, not another service's, not one decided or expired.
async fn notices(store: &dyn Store) {
    let now = store::now_ms();
    let service = format!("notices-{now}");
    let open = async |digest: &str, due: Option<i64>, expires: i64| {
        let mut approval = approval(&format!("{digest}-{now}"), expires).for_service(&service);
        approval.notice_due_ms = due;
        store
            .open_approval(&approval, u64::MAX)
            .await
            .unwrap()
            .unwrap()
    };
    let due = open("due", Some(now - 10), now + 10 * MINUTE).await;
    let older = open("older", Some(now - 20), now + 10 * MINUTE).await;
    let later = open("later", Some(now + MINUTE / 2), now + 10 * MINUTE).await;
    let none = open("none", None, now + 10 * MINUTE).await;
    let lapsed = open("lapsed", Some(now - 30), now - 1).await;
    let decided = open("decided", Some(now - 40), now + 10 * MINUTE).await;
    let decision = Decision::new(false, "approver", "no");
    assert!(store.decide(&decided.id, &decision).await.unwrap());
    let mut elsewhere =
        approval(&format!("elsewhere-{now}"), now + 10 * MINUTE).for_service("other");
    elsewhere.notice_due_ms = Some(now - 50);
    store.open_approval(&elsewhere, u64::MAX).await.unwrap();
    assert_eq!(
        store
            .approval(&due.id)
            .await
            .unwrap()
            .unwrap()
            .notice_due_ms,
        Some(now - 10),
        "kept as opened"
    );

    let ids = |claimed: Vec<ApprovalRecord>| claimed.into_iter().map(|a| a.id).collect::<Vec<_>>();
    // Claimed for the wait asked: the approvals are younger than it.
    let until = now + 5 * MINUTE;
    let claimed = store
        .claim_due_notices(&service, now, 5 * MINUTE, 1)
        .await
        .unwrap();
    assert_eq!(
        claimed[0].notice_due_ms,
        Some(until),
        "due again when the claim runs out"
    );
    assert_eq!(
        ids(claimed),
        std::slice::from_ref(&older.id),
        "the oldest due first, as many as asked"
    );
    let claimed = store
        .claim_due_notices(&service, now, 5 * MINUTE, 10)
        .await
        .unwrap();
    assert_eq!(ids(claimed), std::slice::from_ref(&due.id));
    let again = store
        .claim_due_notices(&service, now, 5 * MINUTE, 10)
        .await
        .unwrap();
    assert!(again.is_empty(), "claimed: {:?}", ids(again));

    // Once the claims run out, the notices are due again, and the later
    // one with them; a sent one is not. Older now than the wait asked,
    // each is claimed for its age: the waits between posts double.
    store.notice_sent(&older.id).await.unwrap();
    let claimed = store
        .claim_due_notices(&service, until, MINUTE, 10)
        .await
        .unwrap();
    let again = claimed.iter().find(|approval| approval.id == due.id);
    assert_eq!(
        again.and_then(|approval| approval.notice_due_ms),
        Some(until + (until - due.created_ms)),
        "claimed for its age"
    );
    let mut claimed = ids(claimed);
    claimed.sort();
    let mut expected = vec![due.id.clone(), later.id.clone()];
    expected.sort();
    assert_eq!(
        claimed,
        expected,
        "{:?}",
        [&none.id, &lapsed.id, &decided.id]
    );
    let sent = store.approval(&older.id).await.unwrap().unwrap();
    assert_eq!(sent.notice_due_ms, None);
    // A wait of forever claims until the largest time, and no further.
    let mut forever = approval(&format!("forever-{now}"), now + 10 * MINUTE).for_service(&service);
    forever.notice_due_ms = Some(until);
    let forever = store
        .open_approval(&forever, u64::MAX)
        .await
        .unwrap()
        .unwrap();
    let claimed = store
        .claim_due_notices(&service, until, i64::MAX, 10)
        .await
        .unwrap();
    let at = claimed.iter().find(|approval| approval.id == forever.id);
    assert_eq!(
        at.and_then(|approval| approval.notice_due_ms),
        Some(i64::MAX)
    );
    let far = until + 100 * MINUTE;
    assert!(
        store
            .claim_due_notices(&service, far, 0, 10)
            .await
            .unwrap()
            .is_empty(),
        "past their expiry, none waits for a decision"
    );
}

/// An escalation asked again under its id — its keeper lost the store's
/// answer — is kept once: answered `true`, nothing written, bound or not,
/// and one resolved stays resolved.
async fn an_escalation_is_kept_once_by_its_id(store: &dyn Store) {
    let now = store::now_ms();
    let who = Some(format!("once-{now}"));
    let first = EscalationRecord::new(json!({"message": "first"}), who.clone());
    assert!(store.record_escalation(&first, u64::MAX).await.unwrap());
    let mut again = first.clone();
    again.envelope = json!({"message": "again"});
    // Without a bound, and with one its caller is at (this one open).
    assert!(store.record_escalation(&again, u64::MAX).await.unwrap());
    assert!(store.record_escalation(&again, 1).await.unwrap());
    let open = store
        .escalations("", None, EscalationState::Open, 100_000)
        .await
        .unwrap();
    let theirs: Vec<_> = open.iter().filter(|kept| kept.caller == who).collect();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].envelope["message"], "first");
    assert!(
        store
            .resolve_escalation(&first.id, "carol", "", now)
            .await
            .unwrap()
    );
    assert!(store.record_escalation(&again, u64::MAX).await.unwrap());
    let read = store.escalation(&first.id).await.unwrap().unwrap();
    assert_eq!(read.state, EscalationState::Resolved);
    assert_eq!(
        store.open_escalations(None, who.as_deref()).await.unwrap(),
        0
    );
}

/// `approvals` lists the newest first, `oldest_approvals` the oldest: each
/// its `limit`, of the service and scopes asked.
async fn listed_newest_or_oldest_first(store: &dyn Store) {
    let now = store::now_ms();
    let service = format!("listed-{now}");
    let mut ids = Vec::new();
    for n in 0..5 {
        let mut waiting =
            approval(&format!("listed-{now}-{n}"), now + MINUTE).for_service(&service);
        waiting.created_ms = now - 1_000 + n;
        assert!(
            store
                .open_approval(&waiting, u64::MAX)
                .await
                .unwrap()
                .is_some()
        );
        ids.push(waiting.id);
    }
    let waiting = [ApprovalState::Pending];
    let scopes = ["refunds:approve"];
    let listed = |found: Vec<ApprovalRecord>| found.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let newest = store.approvals(&service, Some(&scopes), &waiting, 3);
    assert_eq!(
        listed(newest.await.unwrap()),
        [ids[4].as_str(), &ids[3], &ids[2]]
    );
    let oldest = store.oldest_approvals(&service, Some(&scopes), &waiting, 3);
    assert_eq!(
        listed(oldest.await.unwrap()),
        [ids[0].as_str(), &ids[1], &ids[2]]
    );
    let none = store.oldest_approvals(&service, Some(&["hr:approve"]), &waiting, 3);
    assert!(none.await.unwrap().is_empty());

    // Approved in the other order, they are run the oldest first: a yes
    // waits behind no newer one past its time.
    for id in ids.iter().rev() {
        let yes = Decision::new(true, "carol", "").at(now);
        assert!(store.decide(id, &yes).await.unwrap());
    }
    let to_run = store.approvals_to_run(&service, now, 3).await.unwrap();
    assert_eq!(to_run, [ids[0].as_str(), &ids[1], &ids[2]]);
}

/// An approver's yes holds for one time to live after it: an approved call
/// no runner claimed by then (every runner was down) expires unrun — once,
/// escalated and audited — and is claimed by no runner after; one approved
/// within its time stays approved.
async fn a_yes_not_run_in_time_expires_unrun(store: &dyn Store) {
    let now = store::now_ms();
    let service = format!("late-{now}");
    // Opened two hours ago for an hour, approved ninety minutes ago: its
    // yes held until thirty minutes ago.
    let mut late = approval(&format!("late-{now}"), now - 60 * MINUTE).for_service(&service);
    late.created_ms = now - 120 * MINUTE;
    let fresh = approval(&format!("fresh-{now}"), now + 60 * MINUTE).for_service(&service);
    for opened in [&late, &fresh] {
        assert!(
            store
                .open_approval(opened, u64::MAX)
                .await
                .unwrap()
                .is_some()
        );
    }
    let then = Decision::new(true, "carol", "").at(now - 90 * MINUTE);
    assert!(store.decide(&late.id, &then).await.unwrap());
    assert!(
        store
            .decide(&fresh.id, &Decision::new(true, "carol", "").at(now))
            .await
            .unwrap()
    );
    let approved = store.approval(&late.id).await.unwrap().unwrap();
    assert_eq!(approved.state, ApprovalState::Approved);
    assert_eq!(approved.expires_ms, now - 30 * MINUTE);

    let expired = store
        .expire_approvals(&service, now, &escalate)
        .await
        .unwrap();
    let ids: Vec<&str> = expired.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, [late.id.as_str()], "only the yes whose time ran out");
    assert_eq!(expired[0].decided_by.as_deref(), Some("carol"));
    let again = store
        .expire_approvals(&service, now, &escalate)
        .await
        .unwrap();
    assert!(again.is_empty(), "expired once");
    assert_eq!(
        store.approval(&late.id).await.unwrap().map(|a| a.state),
        Some(ApprovalState::Expired)
    );
    assert!(
        (store
            .claim_approval(&late.id, "runner", now, now + MINUTE)
            .await
            .unwrap())
        .is_none(),
        "no runner claims it after"
    );
    assert_eq!(escalations_of(store, &late.id).await, 1);
    assert_eq!(
        audit_of(store, &late.id).await.last(),
        Some(&AuditEntry::expired(&late.id, now))
    );
    let to_run = store.approvals_to_run(&service, now, 10).await.unwrap();
    assert_eq!(
        to_run,
        [fresh.id.as_str()],
        "the yes within its time is run"
    );

    // Its outcome is given for one time to live after the run, not longer:
    // opened forty minutes ago for an hour, approved thirty minutes ago
    // (its yes holds an hour from then), run now — read until an hour
    // from now, however late the yes came.
    let mut slow = approval(&format!("slow-yes-{now}"), now + 20 * MINUTE).for_service(&service);
    slow.created_ms = now - 40 * MINUTE;
    assert!(
        store
            .open_approval(&slow, u64::MAX)
            .await
            .unwrap()
            .is_some()
    );
    let yes = Decision::new(true, "carol", "").at(now - 30 * MINUTE);
    assert!(store.decide(&slow.id, &yes).await.unwrap());
    let approved = store.approval(&slow.id).await.unwrap().unwrap();
    assert_eq!(approved.expires_ms, now + 30 * MINUTE);
    let claimed = store.claim_approval(&slow.id, "runner", now, now + MINUTE);
    assert!(claimed.await.unwrap().is_some());
    let reply = json!({});
    let finished = store.finish_approval(&slow.id, "runner", &reply, now);
    assert!(finished.await.unwrap());
    let done = store.approval(&slow.id).await.unwrap().unwrap();
    assert_eq!(
        (done.state, done.expires_ms),
        (ApprovalState::Done, now + 60 * MINUTE)
    );
}

/// More approvals due than one transaction ends (a store no runner swept
/// for a while): one call ends them all, each escalated once.
async fn a_backlog_expires_whole(store: &dyn Store) {
    let now = store::now_ms();
    let service = format!("backlog-{now}");
    for n in 0..600 {
        let mut due = approval(&format!("backlog-{now}-{n}"), now + 5).for_service(&service);
        due.caller = Some(format!("backlog-caller-{}", n % 7));
        let opened = store.open_approval(&due, u64::MAX).await.unwrap();
        assert!(opened.is_some(), "opened: no bound to pass");
    }
    let escalated = std::sync::atomic::AtomicUsize::new(0);
    let escalate = |expired: &ApprovalRecord, _open: u64| {
        if expired.service == service {
            escalated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        None
    };
    let expired = store
        .expire_approvals(&service, now + 10, &escalate)
        .await
        .unwrap();
    let ours = expired.iter().filter(|a| a.service == service).count();
    assert_eq!(ours, 600);
    assert_eq!(escalated.into_inner(), 600);
    let pending = store.approvals(&service, None, &[ApprovalState::Pending], 1000);
    assert!(pending.await.unwrap().is_empty());
    let ended = store.approvals(&service, None, &[ApprovalState::Expired], 1000);
    assert_eq!(ended.await.unwrap().len(), 600);
}

/// A caller's bounds count what they run, wait for and left open in one
/// service: the same subject at the bound in one service starts, opens
/// and is escalated in another, which may be someone else under bounds of
/// its own; a calling agent's escalations (no service) are counted apart
/// from a tool set's.
async fn bounds_per_service(store: &dyn Store) {
    let now = store::now_ms();
    let (shop, hr) = (format!("shop-bounds-{now}"), format!("hr-bounds-{now}"));
    let who = format!("bounded-{now}");
    let caller = Some(who.as_str());

    let task = |service: &str| {
        TaskRecord::new("slow", json!({}), Some(who.clone()), MINUTE).for_service(service)
    };
    assert!(store.create_task(&task(&shop), 1).await.unwrap());
    assert!(!store.create_task(&task(&shop), 1).await.unwrap());
    assert!(store.create_task(&task(&hr), 1).await.unwrap());
    assert_eq!(store.running_tasks(&shop, caller).await.unwrap(), (1, 1));
    assert_eq!(store.running_tasks(&hr, caller).await.unwrap(), (1, 1));
    assert_eq!(store.running_tasks("", caller).await.unwrap().1, 0);

    let approval = |n: u32, service: &str| {
        let mut theirs = approval(&format!("bounds-{now}-{service}-{n}"), now + MINUTE);
        theirs.caller = Some(who.clone());
        theirs.for_service(service)
    };
    let opens = async |n: u32, service: &str| {
        let opened = store.open_approval(&approval(n, service), 1).await;
        opened.unwrap().is_some()
    };
    assert!(opens(1, &shop).await);
    assert!(!opens(2, &shop).await, "past the bound in its service");
    assert!(opens(3, &hr).await);
    assert_eq!(
        store.waiting_approvals(&shop, caller, now).await.unwrap(),
        1
    );
    assert_eq!(store.waiting_approvals(&hr, caller, now).await.unwrap(), 1);
    assert_eq!(store.waiting_approvals("", caller, now).await.unwrap(), 0);

    let escalation = |service: Option<&str>| {
        let record = EscalationRecord::new(json!({}), Some(who.clone()));
        match service {
            Some(service) => record.for_service(service),
            None => record,
        }
    };
    for service in [Some(shop.as_str()), Some(hr.as_str()), None] {
        assert!(
            store
                .record_escalation(&escalation(service), 1)
                .await
                .unwrap()
        );
        assert!(
            !store
                .record_escalation(&escalation(service), 1)
                .await
                .unwrap()
        );
        assert_eq!(store.open_escalations(service, caller).await.unwrap(), 1);
    }
    assert_eq!(store.open_escalations(Some(""), caller).await.unwrap(), 0);

    // An approval of theirs in one service expiring: the escalations of
    // theirs open in that service alone are counted. Each service expires
    // its own, under its own bounds: the other's stays pending.
    let due = async |n: u32, service: &str| {
        let mut due = approval(n, service);
        due.expires_ms = now + 5;
        let due = store.open_approval(&due, u64::MAX).await.unwrap();
        due.expect("opened: no bound to pass")
    };
    let expiring = due(4, &hr).await;
    let shops = due(5, &shop).await;
    let counted = std::sync::Mutex::new(None);
    let escalate = |expired: &ApprovalRecord, open: u64| {
        if expired.id == expiring.id {
            *counted.lock().unwrap() = Some(open);
        }
        None
    };
    let expired = store
        .expire_approvals(&hr, now + 10, &escalate)
        .await
        .unwrap();
    assert_eq!(
        *counted.lock().unwrap(),
        Some(1),
        "hr's one, not shop's nor the agent's"
    );
    assert!(expired.iter().all(|approval| approval.service == hr));
    let state = async |id: &str| store.approval(id).await.unwrap().unwrap().state;
    assert_eq!(state(&expiring.id).await, ApprovalState::Expired);
    assert_eq!(
        state(&shops.id).await,
        ApprovalState::Pending,
        "shop's left to shop"
    );
    let expired = store
        .expire_approvals(&shop, now + 10, &escalate)
        .await
        .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(state(&shops.id).await, ApprovalState::Expired);
}

async fn tasks(store: &dyn Store) {
    let now = store::now_ms();
    let mut task = TaskRecord::new("slow", json!({"n": 1}), Some("alice".into()), 10 * MINUTE)
        .held_by("replica-a", now + MINUTE);
    task.caller_scopes = vec!["orders:read".into(), "refunds:write".into()];
    assert!(store.create_task(&task, u64::MAX).await.unwrap());
    assert_eq!(store.task(&task.id).await.unwrap().as_ref(), Some(&task));
    assert_eq!(store.task("no-such-task").await.unwrap(), None);

    let (_, alices) = store.running_tasks("", Some("alice")).await.unwrap();
    let (_, bobs) = store.running_tasks("", Some("bob")).await.unwrap();
    assert!(alices >= 1, "alice's task counts as hers");
    assert_eq!(bobs, 0, "alice's task is not bob's");

    // Bounded by caller: past `most_running` of theirs running, nothing is
    // kept; another caller's is.
    let who = format!("tasked-{now}");
    let theirs = || {
        TaskRecord::new("slow", json!({}), Some(who.clone()), MINUTE)
            .held_by("replica-a", now + MINUTE)
    };
    let first = theirs();
    assert!(store.create_task(&first, 1).await.unwrap());
    assert_eq!(
        store.task(&first.id).await.unwrap().as_ref(),
        Some(&first),
        "kept through the count as it was given"
    );
    let past = theirs();
    assert!(!store.create_task(&past, 1).await.unwrap());
    assert_eq!(store.task(&past.id).await.unwrap(), None);
    assert_eq!(store.running_tasks("", Some(&who)).await.unwrap().1, 1);
    let others = TaskRecord::new("slow", json!({}), Some(format!("other-{now}")), MINUTE);
    assert!(store.create_task(&others, 1).await.unwrap());
    // Every caller's running tasks are counted in all: theirs and the
    // other caller's (no other test touches either).
    let (all, whose) = store.running_tasks("", Some(&who)).await.unwrap();
    let (_, other) = store
        .running_tasks("", others.caller.as_deref())
        .await
        .unwrap();
    assert_eq!((whose, other), (1, 1));
    assert!(
        all >= whose + other,
        "{all} running in all, 2 of them these"
    );
    // A task that finished runs no more: its caller may start another.
    let ended = TaskUpdate::finish(TaskState::Completed, None);
    assert!(
        store
            .update_task(&first.id, "replica-a", &ended)
            .await
            .unwrap()
    );
    assert_eq!(store.running_tasks("", Some(&who)).await.unwrap().1, 0);
    assert!(store.create_task(&theirs(), 1).await.unwrap());
    assert_eq!(store.running_tasks("", Some(&who)).await.unwrap().1, 1);
    // A caller without a subject is bounded as one caller too.
    let anonymous =
        || TaskRecord::new("slow", json!({}), None, MINUTE).held_by("replica-a", now + MINUTE);
    let running = store.running_tasks("", None).await.unwrap().1;
    let kept = anonymous();
    assert!(store.create_task(&kept, running + 1).await.unwrap());
    assert!(!store.create_task(&anonymous(), running + 1).await.unwrap());
    assert_eq!(store.running_tasks("", None).await.unwrap().1, running + 1);
    assert!(
        store
            .update_task(&kept.id, "replica-a", &ended)
            .await
            .unwrap()
    );

    // Only the holder changes it.
    let mut working = TaskUpdate::now();
    working.status_message = Some(Some("halfway".into()));
    assert!(
        !store
            .update_task(&task.id, "replica-b", &working)
            .await
            .unwrap()
    );
    assert!(
        store
            .update_task(&task.id, "replica-a", &working)
            .await
            .unwrap()
    );
    let read = store.task(&task.id).await.unwrap().unwrap();
    assert_eq!(read.status_message.as_deref(), Some("halfway"));

    // Answers to what the task asks merge, the first to each kept; an
    // answer to nothing asked is dropped. A cancel is asked for, not forced.
    assert!(store.answer_task(&task.id, &json!({"a": 0})).await.unwrap());
    let mut asking = TaskUpdate::now();
    asking.input_requests = Some(Some(json!({"a": {}, "b": {}})));
    assert!(
        store
            .update_task(&task.id, "replica-a", &asking)
            .await
            .unwrap()
    );
    assert!(store.answer_task(&task.id, &json!({"a": 1})).await.unwrap());
    let answers = json!({"a": 9, "b": 2, "z": "x".repeat(1_000)});
    assert!(store.answer_task(&task.id, &answers).await.unwrap());
    assert!(store.cancel_task(&task.id).await.unwrap());
    let read = store.task(&task.id).await.unwrap().unwrap();
    assert_eq!(read.input_responses, Some(json!({"a": 1, "b": 2})));
    assert!(read.cancel_requested);

    // Finished: nothing changes it any more.
    let done = TaskUpdate::finish(TaskState::Completed, Some(json!({"content": []})));
    assert!(
        store
            .update_task(&task.id, "replica-a", &done)
            .await
            .unwrap()
    );
    assert!(
        !store
            .update_task(&task.id, "replica-a", &working)
            .await
            .unwrap()
    );
    assert!(!store.answer_task(&task.id, &json!({"c": 3})).await.unwrap());
    assert!(!store.cancel_task(&task.id).await.unwrap());
    let read = store.task(&task.id).await.unwrap().unwrap();
    assert_eq!(read.state, TaskState::Completed);
    assert_eq!(read.result, Some(json!({"content": []})));

    // An abandoned task (its lease ran out) is claimed by one replica.
    let abandoned = TaskRecord::new("slow", json!({}), None, 10 * MINUTE)
        .held_by("replica-dead", now - 1)
        .safe_to_repeat(true);
    assert!(store.create_task(&abandoned, u64::MAX).await.unwrap());
    let claimed = (store.claim_abandoned_tasks("", None, "replica-b", now, now + MINUTE, 100))
        .await
        .unwrap();
    let mine: Vec<_> = claimed.iter().filter(|t| t.id == abandoned.id).collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].holder.as_deref(), Some("replica-b"));
    assert_eq!(mine[0].runs, abandoned.runs + 1);
    assert!(mine[0].safe_to_repeat);
    let again = (store.claim_abandoned_tasks("", None, "replica-c", now, now + MINUTE, 100))
        .await
        .unwrap();
    assert!(again.iter().all(|t| t.id != abandoned.id), "claimed twice");
    // Another service's abandoned task is never claimed — a tool of the
    // same name there may do something else — and its own service claims
    // it, read back as its.
    let shop = format!("shop-{now}");
    let mut theirs = TaskRecord::new("slow", json!({}), None, 10 * MINUTE)
        .held_by("replica-dead", now - 1)
        .safe_to_repeat(true);
    theirs.service = shop.clone();
    assert!(store.create_task(&theirs, u64::MAX).await.unwrap());
    for other in ["", "billing"] {
        let claimed =
            (store.claim_abandoned_tasks(other, None, "replica-b", now, now + MINUTE, 100))
                .await
                .unwrap();
        assert!(
            claimed.iter().all(|t| t.id != theirs.id),
            "another service's task claimed by `{other}`"
        );
    }
    let claimed = (store.claim_abandoned_tasks(&shop, None, "replica-s", now, now + MINUTE, 100))
        .await
        .unwrap();
    let ours: Vec<_> = claimed.iter().filter(|t| t.id == theirs.id).collect();
    assert_eq!(ours.len(), 1, "its own service claims it");
    assert_eq!(ours[0].service, shop);
    let read = store.task(&theirs.id).await.unwrap().unwrap();
    assert_eq!(read.service, shop);
    // Claimed the longest abandoned first, as many as asked.
    let lapsed = format!("lapsed-{now}");
    let mut dropped = Vec::new();
    for late in [3, 1, 2] {
        let mut task = TaskRecord::new("slow", json!({}), None, 10 * MINUTE)
            .held_by("replica-dead", now - late * MINUTE);
        task.service = lapsed.clone();
        assert!(store.create_task(&task, u64::MAX).await.unwrap());
        dropped.push(task.id);
    }
    let claim = store.claim_abandoned_tasks(&lapsed, None, "replica-l", now, now + MINUTE, 2);
    let claimed: Vec<String> = claim.await.unwrap().into_iter().map(|t| t.id).collect();
    assert_eq!(claimed, [dropped[0].clone(), dropped[2].clone()]);
    // A replica that lacks a tool (a release rolling out) claims none of
    // its tasks while a replica that has it could run them again; once its
    // time to live ran out, any replica claims one, to end it.
    let newer = format!("newer-{now}");
    let mut new_tool = TaskRecord::new("added", json!({}), None, 10 * MINUTE)
        .held_by("replica-dead", now - 1)
        .safe_to_repeat(true);
    new_tool.service = newer.clone();
    assert!(store.create_task(&new_tool, u64::MAX).await.unwrap());
    let old_tools: &[&str] = &["slow", "refund"];
    let claimed = (store.claim_abandoned_tasks(
        &newer,
        Some(old_tools),
        "replica-old",
        now,
        now + MINUTE,
        100,
    ))
    .await
    .unwrap();
    assert!(
        claimed.is_empty(),
        "a task of a tool the replica lacks: {claimed:?}"
    );
    let claimed =
        (store.claim_abandoned_tasks(&newer, Some(&[]), "replica-old", now, now + MINUTE, 100))
            .await
            .unwrap();
    assert!(
        claimed.is_empty(),
        "a replica with no tools claims none live"
    );
    let new_tools: &[&str] = &["slow", "added"];
    let claimed = (store.claim_abandoned_tasks(
        &newer,
        Some(new_tools),
        "replica-new",
        now,
        now + MINUTE,
        100,
    ))
    .await
    .unwrap();
    assert_eq!(claimed.len(), 1, "the replica with the tool claims it");
    assert_eq!(claimed[0].id, new_tool.id);
    let mut expired = TaskRecord::new("added", json!({}), None, MINUTE)
        .held_by("replica-dead", now - 1)
        .safe_to_repeat(true);
    expired.service = newer.clone();
    expired.created_ms = now - 2 * MINUTE;
    assert!(store.create_task(&expired, u64::MAX).await.unwrap());
    let claimed = (store.claim_abandoned_tasks(
        &newer,
        Some(old_tools),
        "replica-old",
        now,
        now + MINUTE,
        100,
    ))
    .await
    .unwrap();
    let ids: Vec<_> = claimed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [expired.id.as_str()],
        "past its time to live, anyone's to end"
    );

    // A task that finished is never claimed, whatever its lease says.
    let over = TaskRecord::new("slow", json!({}), None, 10 * MINUTE)
        .held_by("replica-dead", now + MINUTE)
        .safe_to_repeat(true);
    assert!(store.create_task(&over, u64::MAX).await.unwrap());
    assert!(
        store
            .update_task(&over.id, "replica-dead", &ended)
            .await
            .unwrap()
    );
    let later = now + 2 * MINUTE;
    let claimed = (store.claim_abandoned_tasks("", None, "replica-b", later, later + MINUTE, 100))
        .await
        .unwrap();
    assert!(
        claimed.iter().all(|t| t.id != over.id),
        "a finished task claimed"
    );

    // Past its time to live, a task is swept, running or not, and counts
    // no more.
    store.sweep(now + 11 * MINUTE).await.unwrap();
    assert_eq!(store.task(&task.id).await.unwrap(), None);
    assert_eq!(store.running_tasks("", Some(&who)).await.unwrap().1, 0);
    let (swept_at, lease) = (now + 11 * MINUTE, now + 12 * MINUTE);
    let swept = (store.claim_abandoned_tasks("", None, "replica-b", swept_at, lease, 100))
        .await
        .unwrap();
    assert!(
        swept.iter().all(|t| t.id != abandoned.id),
        "a swept task claimed"
    );

    // A task that finished late in its life is read for its time to live
    // after it finished, not only until its creation's.
    let late =
        TaskRecord::new("slow", json!({}), None, 10 * MINUTE).held_by("replica-a", now + MINUTE);
    assert!(store.create_task(&late, u64::MAX).await.unwrap());
    let mut finished = TaskUpdate::finish(TaskState::Completed, Some(json!({"content": []})));
    finished.at_ms = now + 9 * MINUTE;
    assert!(
        store
            .update_task(&late.id, "replica-a", &finished)
            .await
            .unwrap()
    );
    store.sweep(now + 11 * MINUTE).await.unwrap();
    let read = store
        .task(&late.id)
        .await
        .unwrap()
        .expect("read after its creation's time to live");
    assert_eq!(read.state, TaskState::Completed);
    store.sweep(now + 19 * MINUTE).await.unwrap();
    assert_eq!(store.task(&late.id).await.unwrap(), None);

    // A task its caller cancelled, unfinished (its replica stopped), is
    // kept a week past its time to live: another service sharing the store
    // does not sweep it before its own takes it over and withdraws what it
    // waited for.
    let cancelled =
        TaskRecord::new("slow", json!({}), None, MINUTE).held_by("replica-gone", now + MINUTE);
    assert!(store.create_task(&cancelled, u64::MAX).await.unwrap());
    assert!(store.cancel_task(&cancelled.id).await.unwrap());
    store.sweep(now + 11 * MINUTE).await.unwrap();
    assert!(store.task(&cancelled.id).await.unwrap().is_some());
    store.sweep(now + 8 * 24 * 60 * MINUTE).await.unwrap();
    assert_eq!(store.task(&cancelled.id).await.unwrap(), None);

    // A task kept for good (the longest time to live there is) is kept,
    // and the sweep of everything else goes on: no sum overflows.
    let for_good = TaskRecord::new("slow", json!({}), None, i64::MAX);
    assert!(store.create_task(&for_good, u64::MAX).await.unwrap());
    let brief = TaskRecord::new("slow", json!({}), None, MINUTE);
    assert!(store.create_task(&brief, u64::MAX).await.unwrap());
    store.sweep(now + 11 * MINUTE).await.unwrap();
    assert!(store.task(&for_good.id).await.unwrap().is_some());
    assert_eq!(store.task(&brief.id).await.unwrap(), None);
}

async fn approvals(store: &dyn Store) {
    let now = store::now_ms();
    let digest = format!("digest-{}", now);
    let opened = store
        .open_approval(&approval(&digest, now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    assert_eq!(opened.state, ApprovalState::Pending);

    // The same call and block meet the approval already open.
    let again = store
        .open_approval(&approval(&digest, now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    assert_eq!(again.id, opened.id);
    let live = store.call_approvals(&digest, now).await.unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(
        live[0].arguments,
        json!({"order_id": "ord-1", "amount": 620})
    );
    assert_eq!(live[0].caller.as_deref(), Some("agent"));
    assert_eq!(live[0].approvers, "refunds:approve");

    let pending = store
        .approvals("", None, &[ApprovalState::Pending], 1000)
        .await
        .unwrap();
    assert!(pending.iter().any(|a| a.id == opened.id));
    // By the approvers' scope too, in the store: another scope's are
    // neither listed nor crowd these out; no scope, nothing.
    let listed = async |scopes: &[&str]| {
        let pending = store.approvals("", Some(scopes), &[ApprovalState::Pending], 1000);
        pending
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect::<Vec<_>>()
    };
    assert!(
        listed(&["hr:approve", "refunds:approve"])
            .await
            .contains(&opened.id)
    );
    let others = listed(&["hr:approve"]).await;
    assert!(!others.contains(&opened.id), "another scope's listed");
    assert!(listed(&[]).await.is_empty());
    // However many scopes a person has (more than a statement may bind
    // one by one), and whatever their characters.
    let many: Vec<String> = (0..70_000).map(|n| format!("team-{n}:approve")).collect();
    let mut many: Vec<&str> = many.iter().map(String::as_str).collect();
    many.extend(["it's \"quoted\"", "refunds:approve"]);
    assert!(listed(&many).await.contains(&opened.id));
    let open = store.escalations("", Some(&many), EscalationState::Open, 10);
    open.await.unwrap();
    // A scope of quotes, a backslash, a tab and letters beyond ASCII is
    // matched as it is written, and only so.
    let odd = "ré\\\"s\tumé:approve";
    let mut unusual = approval(&format!("unusual-{now}"), now + MINUTE);
    unusual.approvers = odd.to_owned();
    let unusual = store
        .open_approval(&unusual, u64::MAX)
        .await
        .unwrap()
        .unwrap();
    assert!(listed(&["hr:approve", odd]).await.contains(&unusual.id));
    for near in [
        "ré\\\"s umé:approve",
        "re\\\"s\tume:approve",
        "ré\\s\tumé:approve",
    ] {
        assert!(!listed(&[near]).await.contains(&unusual.id), "{near:?}");
    }

    // Counted by caller, to bound how many of one caller's wait: pending
    // and not expired.
    let who = format!("counted-{now}");
    for (digest, expires_ms) in [("count", now + MINUTE), ("count-old", now + 10)] {
        let mut theirs = approval(&format!("{digest}-{now}"), expires_ms);
        theirs.caller = Some(who.clone());
        store
            .open_approval(&theirs, u64::MAX)
            .await
            .unwrap()
            .expect("opened: no bound to pass");
    }
    let mut anonymous = approval(&format!("count-anonymous-{now}"), now + MINUTE);
    anonymous.caller = None;
    store
        .open_approval(&anonymous, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    assert_eq!(
        store.waiting_approvals("", Some(&who), now).await.unwrap(),
        2
    );
    assert_eq!(
        store
            .waiting_approvals("", Some(&who), now + 20)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .waiting_approvals("", Some("nobody"), now)
            .await
            .unwrap(),
        0
    );
    assert!(store.waiting_approvals("", None, now).await.unwrap() >= 1);

    // Bounded by caller: past `most_waiting` of theirs waiting, nothing is
    // kept; the call already waiting is still met; another caller opens.
    let bounded = |digest: &str, caller: &str| {
        let mut theirs = approval(&format!("{digest}-{now}"), now + MINUTE);
        theirs.caller = Some(caller.to_owned());
        theirs.created_ms = now;
        theirs
    };
    let first = bounded("bound-1", &who);
    let refused = bounded("bound-2", &who);
    assert_eq!(
        store.open_approval(&first, 3).await.unwrap().map(|a| a.id),
        Some(first.id.clone()),
        "two wait: a third may"
    );
    assert_eq!(
        store.approval(&first.id).await.unwrap().as_ref(),
        Some(&first),
        "kept through the count as it was given"
    );
    assert_eq!(store.open_approval(&refused, 3).await.unwrap(), None);
    assert_eq!(
        store.waiting_approvals("", Some(&who), now).await.unwrap(),
        3
    );
    assert!(store.approval(&refused.id).await.unwrap().is_none());
    let met = store
        .open_approval(&bounded("bound-1", &who), 3)
        .await
        .unwrap()
        .expect("the call that waits already is met at the bound");
    assert_eq!(met.id, first.id);
    let other = bounded("bound-other", &format!("other-{now}"));
    assert!(store.open_approval(&other, 3).await.unwrap().is_some());
    // A caller without a subject is bounded as one caller too.
    let anonymous = |digest: &str| {
        let mut theirs = bounded(digest, "nobody");
        theirs.caller = None;
        theirs
    };
    let waiting = store.waiting_approvals("", None, now).await.unwrap();
    let kept = anonymous("bound-anonymous-1");
    assert!(
        store
            .open_approval(&kept, waiting + 1)
            .await
            .unwrap()
            .is_some()
    );
    let past = anonymous("bound-anonymous-2");
    assert_eq!(store.open_approval(&past, waiting + 1).await.unwrap(), None);
    assert_eq!(
        store.waiting_approvals("", None, now).await.unwrap(),
        waiting + 1
    );

    // An id kept already keeps its approval: another call's record under
    // it is not opened.
    let mut impostor = opened.clone();
    impostor.digest = format!("{}-other", opened.digest);
    impostor.tool = "transfer".into();
    assert_eq!(
        store.open_approval(&impostor, u64::MAX).await.unwrap(),
        None
    );
    assert_eq!(
        store.approval(&opened.id).await.unwrap().unwrap().tool,
        opened.tool
    );

    // Decided once: the second decision, either way, changes nothing.
    let yes = Decision::new(true, "carol", "customer verified");
    assert!(store.decide(&opened.id, &yes).await.unwrap());
    assert!(
        !store
            .decide(&opened.id, &Decision::new(false, "mallory", ""))
            .await
            .unwrap()
    );
    // A decision that says both yes and withdrawn is a yes, which an
    // approved approval does not take again.
    let mut both = Decision::new(true, "carol", "both");
    both.withdrawn = true;
    assert!(!store.decide(&opened.id, &both).await.unwrap());
    let read = store.approval(&opened.id).await.unwrap().unwrap();
    assert_eq!(read.state, ApprovalState::Approved);
    assert_eq!(read.decided_by.as_deref(), Some("carol"));
    assert_eq!(read.note.as_deref(), Some("customer verified"));
    // The decision taken left its line in the audit; the one refused, none.
    assert_eq!(
        audit_of(store, &opened.id).await,
        [yes.audit_entry(&opened.id)]
    );

    // Run once: one claim, then only its holder finishes it.
    assert!(
        store
            .approvals_to_run("", now, 1000)
            .await
            .unwrap()
            .contains(&opened.id)
    );
    // By its own service alone: another one, which may have a tool of the
    // same name doing something else, never lists it — nor does this one
    // list theirs.
    assert!(
        !store
            .approvals_to_run("shop", now, 1000)
            .await
            .unwrap()
            .contains(&opened.id)
    );
    let shop = format!("shop-{now}");
    let mut theirs = approval(&format!("theirs-{now}"), now + MINUTE);
    theirs.service = shop.clone();
    let theirs = store
        .open_approval(&theirs, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    assert_eq!(theirs.service, shop);
    let yes_there = Decision::new(true, "carol", "");
    assert!(store.decide(&theirs.id, &yes_there).await.unwrap());
    assert_eq!(
        store.approval(&theirs.id).await.unwrap().unwrap().service,
        shop
    );
    assert!(
        !store
            .approvals_to_run("", now, 1000)
            .await
            .unwrap()
            .contains(&theirs.id)
    );
    assert!(
        store
            .approvals_to_run(&shop, now, 1000)
            .await
            .unwrap()
            .contains(&theirs.id)
    );
    let listed = async |service: &str| {
        let approved = store.approvals(service, None, &[ApprovalState::Approved], 100_000);
        approved
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect::<Vec<_>>()
    };
    assert!(!listed("").await.contains(&theirs.id));
    assert!(listed(&shop).await.contains(&theirs.id));
    let claim = store
        .claim_approval(&opened.id, "replica-a", now, now + MINUTE)
        .await
        .unwrap();
    assert_eq!(claim.map(|a| a.state), Some(ApprovalState::Running));
    assert_eq!(
        store
            .claim_approval(&opened.id, "replica-b", now, now + MINUTE)
            .await
            .unwrap(),
        None
    );
    assert!(
        !store
            .approvals_to_run("", now, 1000)
            .await
            .unwrap()
            .contains(&opened.id)
    );
    // The holder died: its lease runs out, and another replica claims it.
    let later = now + 2 * MINUTE;
    assert!(
        store
            .approvals_to_run("", later, 1000)
            .await
            .unwrap()
            .contains(&opened.id)
    );
    let taken = store
        .claim_approval(&opened.id, "replica-b", later, later + MINUTE)
        .await
        .unwrap();
    assert_eq!(taken.and_then(|a| a.holder), Some("replica-b".to_owned()));
    // Only the holder renews its lease, and only while the call runs.
    assert!(
        !store
            .renew_approval(&opened.id, "replica-a", later + 5 * MINUTE)
            .await
            .unwrap()
    );
    assert!(
        store
            .renew_approval(&opened.id, "replica-b", later + 5 * MINUTE)
            .await
            .unwrap()
    );
    assert!(
        !store
            .approvals_to_run("", later + 2 * MINUTE, 1000)
            .await
            .unwrap()
            .contains(&opened.id),
        "a renewed lease holds"
    );
    let reply = json!({"content": [{"type": "text", "text": "refunded"}]});
    assert!(
        !store
            .finish_approval(&opened.id, "replica-a", &reply, later)
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_approval(&opened.id, "replica-b", &reply, later)
            .await
            .unwrap()
    );
    let done = store.approval(&opened.id).await.unwrap().unwrap();
    assert_eq!(done.state, ApprovalState::Done);
    assert_eq!(done.result, Some(reply));
    assert!(
        !store
            .renew_approval(&opened.id, "replica-b", later + 9 * MINUTE)
            .await
            .unwrap(),
        "a finished call holds no lease"
    );
    // It ran after the time it was opened for had passed: its result is
    // given to the call made again for one time to live after the run, so
    // that the call is never asked for, approved and run a second time.
    let after_the_run = store
        .call_approvals(&digest, later + MINUTE / 2)
        .await
        .unwrap();
    assert_eq!(
        after_the_run
            .iter()
            .map(|a| (a.id.as_str(), a.state))
            .collect::<Vec<_>>(),
        [(opened.id.as_str(), ApprovalState::Done)]
    );
    assert!(
        store
            .call_approvals(&digest, later + 2 * MINUTE)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .claim_approval(&opened.id, "replica-c", later, later + MINUTE)
            .await
            .unwrap(),
        None
    );

    // An approval kept with the largest expiry there is (as one opened
    // with an unbounded time to live was) is decided, run and swept like
    // any other: no backend's arithmetic overflows on it.
    let forever = store
        .open_approval(&approval(&format!("forever-{now}"), i64::MAX), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    assert!(store.decide(&forever.id, &yes).await.unwrap());
    assert!(
        store
            .claim_approval(&forever.id, "replica-a", now, now + MINUTE)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .finish_approval(&forever.id, "replica-a", &json!({}), now + MINUTE)
            .await
            .unwrap()
    );
    store.sweep(now).await.unwrap();
    let kept = store.approval(&forever.id).await.unwrap().unwrap();
    assert_eq!(
        (kept.state, kept.expires_ms),
        (ApprovalState::Done, i64::MAX)
    );

    // Nobody decided in time: it expires, and a late decision is refused.
    let stale_digest = format!("stale-{}", now);
    let stale = store
        .open_approval(&approval(&stale_digest, now + 10), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let late = Decision::new(true, "carol", "").at(now + 20);
    assert!(!store.decide(&stale.id, &late).await.unwrap());
    let expired = store
        .expire_approvals("", now + 20, &escalate)
        .await
        .unwrap();
    assert!(expired.iter().any(|a| a.id == stale.id));
    assert!(
        store
            .expire_approvals("", now + 20, &escalate)
            .await
            .unwrap()
            .iter()
            .all(|a| a.id != stale.id)
    );
    assert_eq!(
        store.approval(&stale.id).await.unwrap().map(|a| a.state),
        Some(ApprovalState::Expired)
    );
    // Expired once, escalated once, audited once.
    assert_eq!(escalations_of(store, &stale.id).await, 1);
    assert_eq!(
        audit_of(store, &stale.id).await,
        [AuditEntry::expired(&stale.id, now + 20)]
    );

    // Withdrawn by its caller (their task was cancelled): no approver
    // decides it after, nothing runs it; the same call made again reads it
    // until it would have expired (its expiry is not moved), and it counts
    // against its caller's waiting ones until then, no longer than had it
    // been left pending; audited as such.
    let taken_back_digest = format!("taken-back-{now}");
    let mut opened = approval(&taken_back_digest, now + 10 * MINUTE);
    opened.caller = Some(format!("withdrawing-{now}"));
    let taken_back = store
        .open_approval(&opened, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let theirs = opened.caller.as_deref();
    assert_eq!(
        store.waiting_approvals("", theirs, now + 30).await.unwrap(),
        1
    );
    let withdrawn = Decision::withdrawn(theirs.unwrap(), "cancelled").at(now + 30);
    assert!(store.decide(&taken_back.id, &withdrawn).await.unwrap());
    let read = store.approval(&taken_back.id).await.unwrap().unwrap();
    assert_eq!(
        (read.state, read.decided_by.as_deref(), read.expires_ms),
        (ApprovalState::Withdrawn, theirs, taken_back.expires_ms)
    );
    let yes_after = Decision::new(true, "carol", "").at(now + 40);
    assert!(!store.decide(&taken_back.id, &yes_after).await.unwrap());
    assert!(!(store.approvals_to_run("", now + 40, 1000).await.unwrap()).contains(&taken_back.id));
    let live = store
        .call_approvals(&taken_back_digest, now + 40)
        .await
        .unwrap();
    assert_eq!(
        live.iter().map(|a| &a.id).collect::<Vec<_>>(),
        [&taken_back.id]
    );
    assert_eq!(
        store.waiting_approvals("", theirs, now + 40).await.unwrap(),
        1
    );
    let mut another = approval(&format!("{taken_back_digest}-2"), now + 10 * MINUTE);
    another.caller = opened.caller.clone();
    assert_eq!(store.open_approval(&another, 1).await.unwrap(), None);
    let past = read.expires_ms + 1;
    assert!(
        store
            .call_approvals(&taken_back_digest, past)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.waiting_approvals("", theirs, past).await.unwrap(), 0);
    let lines = audit_of(store, &taken_back.id).await;
    assert_eq!(lines, [withdrawn.audit_entry(&taken_back.id)]);
    assert_eq!(lines[0].what, "withdraw");
    // An approved one is withdrawn too until a replica claims its run; a
    // claimed one is not.
    for claimed_first in [false, true] {
        let digest = format!("approved-then-taken-back-{now}-{claimed_first}");
        let opened = store
            .open_approval(&approval(&digest, now + 10 * MINUTE), u64::MAX)
            .await
            .unwrap()
            .expect("opened");
        let yes = Decision::new(true, "carol", "ok").at(now + 30);
        assert!(store.decide(&opened.id, &yes).await.unwrap());
        if claimed_first {
            let claim = store.claim_approval(&opened.id, "replica-a", now, now + MINUTE);
            assert!(claim.await.unwrap().is_some());
        }
        let back = Decision::withdrawn("agent", "cancelled").at(now + 40);
        assert_eq!(
            store.decide(&opened.id, &back).await.unwrap(),
            !claimed_first
        );
        let read = store.approval(&opened.id).await.unwrap().unwrap();
        let expected = match claimed_first {
            true => ApprovalState::Running,
            false => ApprovalState::Withdrawn,
        };
        assert_eq!(read.state, expected);
        let to_run = store.approvals_to_run("", now + 50, 1000).await.unwrap();
        assert!(!to_run.contains(&opened.id));
        let claim = store.claim_approval(&opened.id, "replica-b", now + 50, now + MINUTE);
        assert!(claim.await.unwrap().is_none());
        // Nobody declines an approved one: only its caller withdraws it.
        let no = Decision::new(false, "mallory", "").at(now + 60);
        assert!(!store.decide(&opened.id, &no).await.unwrap());
    }
    // A claim does not look at the expiry, so neither does the withdrawal
    // of an approved call: one that no replica claimed in its time is
    // withdrawn still, and no replica runs it. A pending one past its
    // expiry is not decided at all: it expires, and never runs.
    let digest = format!("approved-long-ago-{now}");
    let opened = store
        .open_approval(&approval(&digest, now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened");
    let yes = Decision::new(true, "carol", "ok").at(now + 30);
    assert!(store.decide(&opened.id, &yes).await.unwrap());
    let approved = store.approval(&opened.id).await.unwrap().unwrap();
    let late = approved.expires_ms + MINUTE;
    let back = Decision::withdrawn("agent", "cancelled").at(late);
    assert!(store.decide(&opened.id, &back).await.unwrap());
    let read = store.approval(&opened.id).await.unwrap().unwrap();
    assert_eq!(read.state, ApprovalState::Withdrawn);
    assert!(!(store.approvals_to_run("", late, 1000).await.unwrap()).contains(&opened.id));
    let claim = store.claim_approval(&opened.id, "replica-b", late, late + MINUTE);
    assert!(claim.await.unwrap().is_none());
    let stale = store
        .open_approval(
            &approval(&format!("pending-long-ago-{now}"), now + MINUTE),
            u64::MAX,
        )
        .await
        .unwrap()
        .expect("opened");
    for late in [yes.at(now + 2 * MINUTE), back.at(now + 2 * MINUTE)] {
        assert!(!store.decide(&stale.id, &late).await.unwrap());
    }
    // The escalation is the runner's to decide, given the caller's open
    // ones of the approval's service counted with the expiry: none kept,
    // the expiry and its audit are.
    let busy = format!("busy-{now}");
    let theirs = EscalationRecord::new(json!({}), Some(busy.clone())).for_service("");
    assert!(store.record_escalation(&theirs, u64::MAX).await.unwrap());
    let mut unseen = approval(&format!("unseen-{now}"), now + 10);
    unseen.caller = Some(busy.clone());
    let unseen = store
        .open_approval(&unseen, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let counted = std::sync::Mutex::new(Vec::new());
    let none = |expired: &ApprovalRecord, open: u64| {
        if expired.caller.as_deref() == Some(busy.as_str()) {
            counted.lock().unwrap().push(open);
        }
        None
    };
    let expired = store.expire_approvals("", now + 20, &none).await.unwrap();
    assert!(expired.iter().any(|a| a.id == unseen.id));
    assert_eq!(*counted.lock().unwrap(), [1]);
    assert_eq!(escalations_of(store, &unseen.id).await, 0);
    assert_eq!(audit_of(store, &unseen.id).await.len(), 1);
    // An expired approval does not stand for its call: a new one opens.
    let fresh = store
        .open_approval(&approval(&stale_digest, now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    assert_ne!(fresh.id, stale.id);

    // A decline is kept, and stands for its call until it expires.
    let declined_digest = format!("declined-{}", now);
    let no = store
        .open_approval(&approval(&declined_digest, now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    // Declined just before it would have expired: the decline stands for
    // one time to live after the decision.
    let last_moment = Decision::new(false, "carol", "fraud").at(now + MINUTE - 1_000);
    assert!(store.decide(&no.id, &last_moment).await.unwrap());
    let live = store
        .call_approvals(&declined_digest, now + MINUTE + 30_000)
        .await
        .unwrap();
    assert_eq!(
        live.iter().map(|a| a.state).collect::<Vec<_>>(),
        [ApprovalState::Declined]
    );
    assert!(
        store
            .call_approvals(&declined_digest, now + 2 * MINUTE)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn single_use(store: &dyn Store) {
    let now = store::now_ms();
    let nonce = format!("nonce-{now}");
    assert!(!store.redeemed(&nonce).await.unwrap(), "read before");
    assert!(store.redeem(&nonce, now + MINUTE).await.unwrap());
    assert!(store.redeemed(&nonce).await.unwrap(), "read after");
    assert!(
        !store.redeem(&nonce, now + MINUTE).await.unwrap(),
        "redeemed twice"
    );
    assert!(!store.redeemed(&format!("{nonce}-other")).await.unwrap());
    // Past its expiry the state is refused anyway; the record may go.
    // Redeemed for good (every inbox session of a person ended): kept
    // through any sweep.
    let forever = format!("forever-{now}");
    assert!(store.redeem(&forever, i64::MAX).await.unwrap());
    store.sweep(now + 2 * MINUTE).await.unwrap();
    assert!(!store.redeemed(&nonce).await.unwrap(), "swept");
    assert!(store.redeem(&nonce, now + 3 * MINUTE).await.unwrap());
    store.sweep(i64::MAX - 1).await.unwrap();
    assert!(store.redeemed(&forever).await.unwrap(), "kept for good");
    assert!(!store.redeem(&forever, i64::MAX).await.unwrap());
}

async fn escalations_and_audit(store: &dyn Store) {
    // A service's escalations are listed for it alone, a calling agent's
    // (no service) for every service; read back as kept.
    let now = store::now_ms();
    let shop = format!("shop-{now}");
    let who = Some(format!("services-{now}"));
    let theirs = EscalationRecord::new(json!({}), who.clone()).for_service(shop.clone());
    let agents = EscalationRecord::new(json!({}), who);
    for record in [&theirs, &agents] {
        assert!(store.record_escalation(record, u64::MAX).await.unwrap());
    }
    let listed = async |service: &str| {
        let open = store.escalations(service, None, EscalationState::Open, 100_000);
        open.await
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    let (here, there) = (listed("").await, listed(&shop).await);
    assert!(!here.contains(&theirs.id) && here.contains(&agents.id));
    assert!(there.contains(&theirs.id) && there.contains(&agents.id));
    let read = store.escalation(&theirs.id).await.unwrap().unwrap();
    assert_eq!(read.service.as_deref(), Some(shop.as_str()));

    // Asked by scope, only theirs and those anyone may resolve are listed.
    let scoped = |scope: &str| {
        EscalationRecord::new(json!({}), Some(format!("scoped-{now}")))
            .for_service(shop.clone())
            .for_approvers(scope)
    };
    let (refunds, hr) = (scoped("refunds:approve"), scoped("hr:approve"));
    for record in [&refunds, &hr] {
        assert!(store.record_escalation(record, u64::MAX).await.unwrap());
    }
    let by_scope = async |scopes: Option<&[&str]>| {
        let open = store.escalations(&shop, scopes, EscalationState::Open, 100_000);
        let ids: Vec<String> = open.await.unwrap().into_iter().map(|e| e.id).collect();
        [&refunds, &hr, &theirs, &agents].map(|record| ids.contains(&record.id))
    };
    assert_eq!(by_scope(None).await, [true, true, true, true]);
    let refunders = by_scope(Some(&["refunds:approve", "billing:approve"])).await;
    assert_eq!(refunders, [true, false, true, true]);
    assert_eq!(by_scope(Some(&[])).await, [false, false, true, true]);
    assert_eq!(
        store.escalation(&agents.id).await.unwrap().unwrap().service,
        None
    );

    // The design's refund escalation, as a served tool sends it (its tool
    // named beside the four pillars).
    let mut envelope: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/envelopes/refund-policy-cap.json")).unwrap();
    envelope["tool"] = json!("process_refund");
    let escalation = EscalationRecord::new(envelope.clone(), Some("agent".into()));
    assert_eq!(escalation.tool.as_deref(), Some("process_refund"));
    assert!(
        store
            .record_escalation(&escalation, u64::MAX)
            .await
            .unwrap()
    );
    let open = store
        .escalations("", None, EscalationState::Open, 1000)
        .await
        .unwrap();
    let kept = open.iter().find(|e| e.id == escalation.id).unwrap();
    assert_eq!(kept.envelope, envelope);
    assert_eq!(kept.approvers, None);
    assert_eq!(
        store.escalation(&escalation.id).await.unwrap().as_ref(),
        Some(kept)
    );
    assert_eq!(store.escalation("no-such-escalation").await.unwrap(), None);
    // One kept for an approval's approvers says whose it is.
    let theirs =
        EscalationRecord::new(envelope.clone(), Some("agent".into())).for_approvers("hr:approve");
    assert!(store.record_escalation(&theirs, u64::MAX).await.unwrap());
    assert_eq!(
        store.escalation(&theirs.id).await.unwrap().as_ref(),
        Some(&theirs)
    );

    let at = store::now_ms();
    assert!(
        store
            .resolve_escalation(&escalation.id, "carol", "refunded by hand", at)
            .await
            .unwrap()
    );
    assert!(
        !store
            .resolve_escalation(&escalation.id, "dave", "again", at)
            .await
            .unwrap()
    );
    let resolved = store
        .escalations("", None, EscalationState::Resolved, 1000)
        .await
        .unwrap();
    let kept = resolved.iter().find(|e| e.id == escalation.id).unwrap();
    assert_eq!(kept.resolved_by.as_deref(), Some("carol"));
    assert_eq!(kept.note.as_deref(), Some("refunded by hand"));
    assert_eq!(
        audit_of(store, &escalation.id).await,
        [AuditEntry::resolved(
            "carol",
            &escalation.id,
            "refunded by hand",
            at
        )]
    );

    // Counted by caller, to bound how many of one caller's stay open.
    let who = format!("escalated-{at}");
    let theirs = EscalationRecord::new(json!({}), Some(who.clone()));
    assert!(store.record_escalation(&theirs, u64::MAX).await.unwrap());
    assert_eq!(store.open_escalations(None, Some(&who)).await.unwrap(), 1);
    assert!(
        store
            .resolve_escalation(&theirs.id, "carol", "", at)
            .await
            .unwrap()
    );
    assert_eq!(store.open_escalations(None, Some(&who)).await.unwrap(), 0);
    // Bounded by caller: past `most_open` of theirs open, nothing is kept
    // (a resolved one does not count); another caller's is.
    let bounded = EscalationRecord::new(json!({}), Some(who.clone()));
    assert!(store.record_escalation(&bounded, 1).await.unwrap());
    let open = store
        .escalations("", None, EscalationState::Open, 10_000)
        .await
        .unwrap();
    assert_eq!(
        open.iter().find(|escalation| escalation.id == bounded.id),
        Some(&bounded),
        "kept through the count as it was given"
    );
    // A caller without a subject is bounded as one caller too.
    let open = store.open_escalations(None, None).await.unwrap();
    let anonymous = EscalationRecord::new(json!({}), None);
    assert!(store.record_escalation(&anonymous, open + 1).await.unwrap());
    let past_anonymous = EscalationRecord::new(json!({}), None);
    assert!(
        !store
            .record_escalation(&past_anonymous, open + 1)
            .await
            .unwrap()
    );
    assert!(
        store
            .resolve_escalation(&anonymous.id, "carol", "", at)
            .await
            .unwrap()
    );
    let past = EscalationRecord::new(json!({}), Some(who.clone()));
    assert!(!store.record_escalation(&past, 1).await.unwrap());
    assert_eq!(store.open_escalations(None, Some(&who)).await.unwrap(), 1);
    let others = EscalationRecord::new(json!({}), Some(format!("other-{at}")));
    assert!(store.record_escalation(&others, 1).await.unwrap());
    assert!(
        store
            .resolve_escalation(&bounded.id, "carol", "", at)
            .await
            .unwrap()
    );
    let anonymous = EscalationRecord::new(json!({}), None);
    assert!(store.record_escalation(&anonymous, u64::MAX).await.unwrap());
    assert!(store.open_escalations(None, None).await.unwrap() >= 1);

    // Resolved long ago: forgotten when asked, its resolution's line in the
    // audit kept; neither an open one nor one resolved since goes with it.
    let day = 86_400_000;
    let old = EscalationRecord::new(json!({}), Some(who.clone()));
    let recent = EscalationRecord::new(json!({}), Some(who.clone()));
    let still_open = EscalationRecord::new(json!({}), Some(who.clone()));
    // Another service's, resolved as long ago: theirs to forget.
    let shop = format!("shop-{at}");
    let theirs = EscalationRecord::new(json!({}), Some(who.clone())).for_service(shop.clone());
    for record in [&old, &recent, &still_open, &theirs] {
        assert!(store.record_escalation(record, u64::MAX).await.unwrap());
    }
    for long_ago in [&old, &theirs] {
        let resolved = store.resolve_escalation(&long_ago.id, "carol", "long ago", at - 10 * day);
        assert!(resolved.await.unwrap());
    }
    assert!(
        store
            .resolve_escalation(&recent.id, "carol", "lately", at - 7 * day)
            .await
            .unwrap()
    );
    // Resolved before the cut-off goes; resolved at it stays.
    assert!(
        store
            .forget_resolved_escalations("", at - 7 * day)
            .await
            .unwrap()
            >= 1
    );
    let kept = store.escalation(&theirs.id).await.unwrap();
    assert!(kept.is_some(), "another service's forgotten");
    let resolved = store
        .escalations("", None, EscalationState::Resolved, 1000)
        .await
        .unwrap();
    assert!(!resolved.iter().any(|e| e.id == old.id), "forgotten");
    assert!(resolved.iter().any(|e| e.id == recent.id));
    assert!(resolved.iter().any(|e| e.id == escalation.id));
    let open = store
        .escalations("", None, EscalationState::Open, 1000)
        .await
        .unwrap();
    assert!(open.iter().any(|e| e.id == still_open.id));
    assert_eq!(audit_of(store, &old.id).await.len(), 1, "its line stays");
    assert_eq!(
        store
            .forget_resolved_escalations("", at - 7 * day)
            .await
            .unwrap(),
        0
    );
    let forgotten = store.forget_resolved_escalations(&shop, at - 7 * day);
    assert_eq!(forgotten.await.unwrap(), 1);
    assert_eq!(store.escalation(&theirs.id).await.unwrap(), None);

    let entry = AuditEntry::new("carol", "sign_in", format!("inbox-{at}"), "");
    store.audit(&entry).await.unwrap();
    assert_eq!(
        audit_of(store, &entry.subject).await,
        std::slice::from_ref(&entry)
    );
}

/// What the runner keeps for an approval that expired: an escalation that
/// names it.
fn escalate(expired: &ApprovalRecord, _open: u64) -> Option<EscalationRecord> {
    Some(EscalationRecord::new(
        json!({"approval": expired.id}),
        expired.caller.clone(),
    ))
}

/// The lines of the audit about `subject`, oldest first.
async fn audit_of(store: &dyn Store, subject: &str) -> Vec<AuditEntry> {
    let mut lines: Vec<_> = (store.audit_log(10_000).await.unwrap().into_iter())
        .filter(|entry| entry.subject == subject)
        .collect();
    lines.reverse();
    lines
}

/// How many open escalations [`escalate`] kept for the approval `id`.
async fn escalations_of(store: &dyn Store, id: &str) -> usize {
    (store
        .escalations("", None, EscalationState::Open, 10_000)
        .await
        .unwrap()
        .iter())
    .filter(|escalation| escalation.envelope["approval"] == id)
    .count()
}

/// Many replicas at once on one approval: one decides, one claims, one
/// redeems.
async fn races(replicas: Vec<Arc<dyn Store>>) {
    renewals_never_undo_a_finish(&replicas).await;
    let now = store::now_ms();
    let digest = format!("race-{now}");
    let opened = replicas[0]
        .open_approval(&approval(&digest, now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let nonce = format!("race-nonce-{now}");

    let mut decides = Vec::new();
    let mut redeems = Vec::new();
    for n in 0..40 {
        let store = Arc::clone(&replicas[n % replicas.len()]);
        let id = opened.id.clone();
        decides.push(tokio::spawn(async move {
            let decision = Decision::new(n % 2 == 0, format!("approver-{n}"), "");
            store.decide(&id, &decision).await.unwrap()
        }));
        let store = Arc::clone(&replicas[n % replicas.len()]);
        let nonce = nonce.clone();
        redeems.push(tokio::spawn(async move {
            store.redeem(&nonce, now + MINUTE).await.unwrap()
        }));
    }
    let mut decided = 0;
    for decide in decides {
        decided += usize::from(decide.await.unwrap());
    }
    let mut redeemed = 0;
    for redeem in redeems {
        redeemed += usize::from(redeem.await.unwrap());
    }
    assert_eq!(decided, 1, "one approval decided {decided} times");
    assert_eq!(redeemed, 1, "one state redeemed {redeemed} times");

    // A due notice is claimed by one replica, however many claim it at once.
    let mut noticed = approval(&format!("race-notice-{now}"), now + MINUTE).for_service("race");
    noticed.notice_due_ms = Some(now);
    replicas[0].open_approval(&noticed, u64::MAX).await.unwrap();
    let claims = crowd(&replicas, |store, _| async move {
        let claimed = store
            .claim_due_notices("race", now, MINUTE, 10)
            .await
            .unwrap();
        !claimed.is_empty()
    })
    .await;
    assert_eq!(claims, 1, "one notice claimed {claims} times");

    // Whichever decision won, an approved call is claimed by one replica:
    // a second approval, approved once, raced for by all of them.
    let approved = replicas[0]
        .open_approval(
            &approval(&format!("race-run-{now}"), now + MINUTE),
            u64::MAX,
        )
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let yes = Decision::new(true, "carol", "");
    assert!(replicas[0].decide(&approved.id, &yes).await.unwrap());
    let mut claims = Vec::new();
    for n in 0..40 {
        let store = Arc::clone(&replicas[n % replicas.len()]);
        let id = approved.id.clone();
        claims.push(tokio::spawn(async move {
            let holder = format!("replica-{n}");
            (store.claim_approval(&id, &holder, now, now + MINUTE))
                .await
                .unwrap()
                .is_some()
        }));
    }
    let mut claimed = 0;
    for claim in claims {
        claimed += usize::from(claim.await.unwrap());
    }
    assert_eq!(claimed, 1, "one approval claimed {claimed} times");

    // One caller's calls opening approvals at once on every replica, each
    // a different call: no more than the bound are kept.
    let caller = format!("crowd-{now}");
    let opened = crowd(&replicas, |store, n| {
        let mut theirs = approval(&format!("crowd-{now}-{n}"), now + MINUTE);
        theirs.caller = Some(caller.clone());
        async move { store.open_approval(&theirs, 3).await.unwrap().is_some() }
    })
    .await;
    assert_eq!(opened, 3, "{opened} approvals kept against a bound of 3");
    let waiting = replicas[0].waiting_approvals("", Some(&caller), now).await;
    assert_eq!(waiting.unwrap(), 3);

    // One call opened at once on every replica, under a bound: one is
    // kept, and every replica meets it (the others' inserts conflict).
    let same = format!("same-{now}");
    let met = crowd(&replicas, |store, _| {
        let mut theirs = approval(&same, now + MINUTE);
        theirs.caller = Some(same.clone());
        async move { store.open_approval(&theirs, 3).await.unwrap().is_some() }
    })
    .await;
    assert_eq!(met, 40, "{met} of 40 met the one call's approval");
    let waiting = replicas[0].waiting_approvals("", Some(&same), now).await;
    assert_eq!(waiting.unwrap(), 1);

    // And their escalations kept at once: no more than the bound are open.
    let kept = crowd(&replicas, |store, n| {
        let theirs = EscalationRecord::new(json!({"n": n}), Some(caller.clone()));
        async move { store.record_escalation(&theirs, 3).await.unwrap() }
    })
    .await;
    assert_eq!(kept, 3, "{kept} escalations kept against a bound of 3");
    let open = replicas[0].open_escalations(None, Some(&caller)).await;
    assert_eq!(open.unwrap(), 3);

    // And their tasks started at once: no more than the bound run.
    let started = crowd(&replicas, |store, n| {
        let theirs = TaskRecord::new("slow", json!({"n": n}), Some(caller.clone()), MINUTE);
        async move { store.create_task(&theirs, 3).await.unwrap() }
    })
    .await;
    assert_eq!(started, 3, "{started} tasks kept against a bound of 3");
    let running = replicas[0].running_tasks("", Some(&caller)).await;
    assert_eq!(running.unwrap().1, 3);
}

/// Forty at once, spread over `replicas`, each `keep(store, n)` spawned:
/// how many said they kept theirs.
async fn crowd<F, Fut>(replicas: &[Arc<dyn Store>], keep: F) -> usize
where
    F: Fn(Arc<dyn Store>, usize) -> Fut,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let spawned: Vec<_> = (0..40)
        .map(|n| tokio::spawn(keep(Arc::clone(&replicas[n % replicas.len()]), n)))
        .collect();
    let mut kept = 0;
    for one in spawned {
        kept += usize::from(one.await.unwrap());
    }
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_store_keeps_the_contract() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    contract(Arc::clone(&store)).await;
    races(vec![store]).await;
}

/// Each in-memory store is a record of spent states of its own: a new one
/// (a restart) is not named as the one before, whose record it has not.
#[test]
fn each_memory_store_names_its_own_ledger() {
    let (one, two) = (MemoryStore::new(), MemoryStore::new());
    assert!(!one.ledger().is_empty());
    assert_ne!(one.ledger(), two.ledger());
}

/// A store a later release migrated further (rolling upgrades, a
/// rollback) is opened by this one all the same: the migrations it does
/// not know of only added.
#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_store_a_later_release_migrated_opens_here() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("later.db");
    let url = format!("sqlite:{}", path.display());
    drop(store::open(&url).await.unwrap());
    // Run beside the store, as the other release or application would.
    let beside = async |statements: &[&'static str]| {
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        for statement in statements {
            sqlx::query(*statement).execute(&pool).await.unwrap();
        }
        pool.close().await;
    };
    beside(&[
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (9999, 'tool-envelope from later', TRUE, X'00', 0)",
        "ALTER TABLE te_tasks ADD COLUMN later TEXT",
    ])
    .await;
    let reopened = store::open(&url)
        .await
        .expect("opened by the earlier release");
    let task = TaskRecord::new("slow", json!({}), None, MINUTE);
    assert!(reopened.create_task(&task, u64::MAX).await.unwrap());
    assert!(reopened.task(&task.id).await.unwrap().is_some());
    drop(reopened);

    // Another application's migration says the database is not the store's.
    beside(&[
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (20261205, 'create users', TRUE, X'00', 0)",
    ])
    .await;
    let refused = store::open(&url)
        .await
        .expect_err("another application's database");
    assert!(refused.to_string().contains("create users"), "{refused}");
}

/// A database another application migrated with sqlx is refused, naming
/// its migration — numbered as the store's first, or not.
#[tokio::test]
async fn a_database_another_application_migrated_is_refused_by_name() {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("theirs.db");
    let url = format!("sqlite:{}?mode=rwc", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let theirs = Migration::new(
        1,
        std::borrow::Cow::Borrowed("create users"),
        MigrationType::Simple,
        sqlx::SqlStr::from_static("CREATE TABLE users (id INTEGER PRIMARY KEY)"),
        false,
    );
    Migrator::with_migrations(vec![theirs])
        .run(&pool)
        .await
        .unwrap();
    pool.close().await;
    let refused = store::open(&format!("sqlite:{}", path.display()))
        .await
        .expect_err("another application's database");
    assert!(
        refused
            .to_string()
            .contains("another application's migration 1 (create users)"),
        "{refused}"
    );
}

/// A SQLite store kept by the releases before services (migrations 1–6)
/// loses nothing to the upgrade: its rows are the unnamed service's — its
/// approved call listed to run for an unnamed set and no named one, its
/// abandoned task taken over likewise — and its escalation, a calling
/// agent's, is seen by every service.
#[tokio::test]
async fn a_store_from_before_services_keeps_its_rows_as_the_unnamed_services() {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("before-services.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}?mode=rwc", path.display()))
        .await
        .unwrap();
    let before: [(i64, &str, &'static str); 6] = [
        (
            1,
            "store",
            include_str!("../runtime/src/store/migrations/0001_store.sql"),
        ),
        (
            2,
            "task scopes",
            include_str!("../runtime/src/store/migrations/0002_task_scopes.sql"),
        ),
        (
            3,
            "counts by caller",
            include_str!("../runtime/src/store/migrations/0003_counts_by_caller.sql"),
        ),
        (
            4,
            "resolved escalations by time",
            include_str!("../runtime/src/store/migrations/0004_resolved_by_time.sql"),
        ),
        (
            5,
            "tasks by caller",
            include_str!("../runtime/src/store/migrations/0005_tasks_by_caller.sql"),
        ),
        (
            6,
            "escalation approvers",
            include_str!("../runtime/src/store/migrations/0006_escalation_approvers.sql"),
        ),
    ];
    let migrations = before.map(|(version, what, sql)| {
        let what = std::borrow::Cow::Owned(format!("tool-envelope {what}"));
        Migration::new(
            version,
            what,
            MigrationType::Simple,
            sqlx::SqlStr::from_static(sql),
            false,
        )
    });
    Migrator::with_migrations(migrations.into())
        .run(&pool)
        .await
        .unwrap();
    let now = store::now_ms();
    let rows = [
        "INSERT INTO te_approvals (id, digest, block, tool, arguments, shown, caller, caller_scopes, \
         approvers, state, created_ms, expires_ms, lease_until_ms, safe_to_repeat) \
         VALUES ('old-approved', 'old-digest', 'cap@0', 'refund', '{}', '{}', NULL, '[]', \
         'refunds:approve', 'approved', $1, $1 + 60000, 0, false)",
        "INSERT INTO te_tasks (id, tool, arguments, caller, state, created_ms, updated_ms, ttl_ms, \
         holder, lease_until_ms, safe_to_repeat, runs, cancel_requested, version, caller_scopes) \
         VALUES ('old-task', 'slow', '{}', NULL, 'working', $1, $1, 600000, 'dead-replica', $1 - 1, \
         true, 1, false, 0, '[]')",
        "INSERT INTO te_escalations (id, tool, caller, envelope, state, created_ms) \
         VALUES ('old-escalation', NULL, NULL, '{}', 'open', $1)",
    ];
    for row in rows {
        sqlx::query(row).bind(now).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let store = store::open(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    let approved = store.approval("old-approved").await.unwrap().unwrap();
    assert_eq!(
        (approved.service.as_str(), approved.state),
        ("", ApprovalState::Approved)
    );
    assert!(
        store
            .approvals_to_run("billing", now, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.approvals_to_run("", now, 100).await.unwrap(),
        ["old-approved"]
    );
    assert_eq!(store.task("old-task").await.unwrap().unwrap().service, "");
    let later = now + 1;
    let taken =
        store.claim_abandoned_tasks("billing", None, "replica-b", later, later + MINUTE, 10);
    assert!(taken.await.unwrap().is_empty());
    let taken = store.claim_abandoned_tasks("", None, "replica-b", later, later + MINUTE, 10);
    assert_eq!(taken.await.unwrap().len(), 1);
    let escalation = store.escalation("old-escalation").await.unwrap().unwrap();
    assert_eq!(escalation.service, None);
    for service in ["", "billing"] {
        let open = store.escalations(service, None, EscalationState::Open, 10);
        assert_eq!(open.await.unwrap().len(), 1, "{service}");
    }
}

#[test]
fn a_store_url_of_no_backend_is_refused_clearly() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let error = runtime
        .block_on(store::open("redis://localhost"))
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`memory:`, `sqlite:PATH` or `postgres://"),
        "{error}"
    );
    assert!(runtime.block_on(store::open("memory:")).is_ok());
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_keeps_the_contract_across_two_replicas_and_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("store.db").display());

    let first = store::open(&url).await.unwrap();
    contract(Arc::clone(&first)).await;
    let second = store::open(&url).await.unwrap();
    // One file, one record of spent states, named alike for both.
    assert_eq!(first.ledger(), second.ledger());
    races(vec![Arc::clone(&first), second]).await;
    let elsewhere = format!("sqlite:{}", folder.path().join("other.db").display());
    let other = store::open(&elsewhere).await.unwrap();
    assert_ne!(
        other.ledger(),
        first.ledger(),
        "another file, another record"
    );
    let ledger = first.ledger().to_owned();

    // What was kept is there after a restart, migrations run again.
    let now = store::now_ms();
    let kept = first
        .open_approval(&approval("restart", now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    drop(first);
    let reopened = store::open(&url).await.unwrap();
    let read = reopened.approval(&kept.id).await.unwrap().unwrap();
    assert_eq!(read, kept);
    assert_eq!(
        reopened.ledger(),
        ledger,
        "the same record, named as before"
    );
    drop(reopened);
}

/// On a database whose default isolation is `serializable`, the store
/// still reads committed data: of two replicas deciding one approval at
/// once, one decides and the other finds it decided — neither fails.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_decides_races_whatever_the_databases_isolation() {
    let Ok(url) = std::env::var("TOOL_ENVELOPE_TEST_POSTGRES") else {
        eprintln!("TOOL_ENVELOPE_TEST_POSTGRES is not set: scripts/test-postgres.sh runs this");
        return;
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    let strict =
        format!("{url}{separator}options=-c%20default_transaction_isolation%3Dserializable");
    let (one, two) = (
        store::open(&strict).await.unwrap(),
        store::open(&strict).await.unwrap(),
    );
    let now = store::now_ms();
    for n in 0..40 {
        let approval = ApprovalRecord::new(
            format!("isolation-{now}-{n}"),
            "cap@0",
            "refund",
            json!({"n": n}),
            json!({}),
            None,
            "refunds:approve",
            now + 10 * MINUTE,
        );
        let opened = one
            .open_approval(&approval, u64::MAX)
            .await
            .unwrap()
            .unwrap();
        let (yes, no) = (
            Decision::new(true, "carol", ""),
            Decision::new(false, "dave", ""),
        );
        let (a, b) = tokio::join!(one.decide(&opened.id, &yes), two.decide(&opened.id, &no));
        let decided = [a.expect("no serialization failure"), b.expect("nor here")];
        assert_eq!(
            decided.iter().filter(|d| **d).count(),
            1,
            "{n}: decided once"
        );
    }
}

/// Migrations that failed on Postgres let go of the database's migration
/// lock, though the pool they ran on lives on (an application's, given to
/// `from_pool`): the next store to open — another replica, or this one once
/// the database is mended — migrates, where it would wait for good.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrations_that_failed_leave_no_lock_behind() {
    let Ok(url) = std::env::var("TOOL_ENVELOPE_TEST_POSTGRES") else {
        eprintln!("TOOL_ENVELOPE_TEST_POSTGRES is not set: scripts/test-postgres.sh runs this");
        return;
    };
    // A schema of its own, where a table of the store's name and another
    // shape makes the first migration fail after it took the lock.
    let schema = format!("te_broken_{}", store::now_ms());
    let admin = sqlx::PgPool::connect(&url).await.unwrap();
    let run = async |statement: String| {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&admin)
            .await
            .unwrap();
    };
    run(format!("CREATE SCHEMA {schema}")).await;
    run(format!("CREATE TABLE {schema}.te_tasks (id TEXT)")).await;
    let separator = if url.contains('?') { '&' } else { '?' };
    let there = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    let pool = sqlx::PgPool::connect(&there).await.unwrap();
    let minute = std::time::Duration::from_secs(60);
    // Each try after the first on another of the pool's connections.
    let failed = tokio::time::timeout(minute, store::PostgresStore::from_pool(pool.clone()))
        .await
        .expect("no try waited on the lock a try before it left");
    assert!(failed.is_err(), "a table of another shape");

    run(format!("DROP TABLE {schema}.te_tasks")).await;
    let opened = tokio::time::timeout(minute, store::open(&there))
        .await
        .expect("the migration lock was let go");
    opened.unwrap();
    drop(pool);
    run(format!("DROP SCHEMA {schema} CASCADE")).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_contract_across_two_replicas() {
    let Ok(url) = std::env::var("TOOL_ENVELOPE_TEST_POSTGRES") else {
        eprintln!("TOOL_ENVELOPE_TEST_POSTGRES is not set: scripts/test-postgres.sh runs this");
        return;
    };
    let first = store::open(&url).await.unwrap();
    contract(Arc::clone(&first)).await;
    let second = store::open(&url).await.unwrap();
    assert_eq!(first.ledger(), second.ledger(), "one database, one record");
    races(vec![Arc::clone(&first), second]).await;

    // Last, alone on the database: the audit made to fail for a moment.
    let beside = sqlx::PgPool::connect(&url).await.unwrap();
    let sql = |statement: &'static str| {
        let beside = beside.clone();
        async move {
            sqlx::query(statement).execute(&beside).await.unwrap();
        }
    };
    let down = [
        "CREATE OR REPLACE FUNCTION te_test_audit_down() RETURNS trigger AS $$ \
         BEGIN RAISE EXCEPTION 'the audit cannot be written'; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER audit_down BEFORE INSERT ON te_audit \
         FOR EACH ROW EXECUTE FUNCTION te_test_audit_down()",
    ];
    let up = [
        "DROP TRIGGER audit_down ON te_audit",
        "DROP FUNCTION te_test_audit_down()",
    ];
    // P0001: a raised exception's SQLSTATE.
    nothing_without_its_audit(&*first, sql, &down, &up, "P0001").await;

    // A caller's lock held elsewhere (a replica cut off in the middle of a
    // count) holds a counted keep up for 10 seconds, then the store says
    // so; a keep that counts nothing does not wait for it, nor does
    // another caller's, nor the same subject's in another service.
    let held = format!("held-{}", store::now_ms());
    let mut holder = beside.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("te-caller:{}", json!(["", held])))
        .execute(&mut *holder)
        .await
        .unwrap();
    let task = |caller: &str| TaskRecord::new("slow", json!({}), Some(caller.into()), MINUTE);
    assert!(first.create_task(&task(&held), u64::MAX).await.unwrap());
    let mut unbounded = approval(&format!("unbounded-{held}"), store::now_ms() + MINUTE);
    unbounded.caller = Some(held.clone());
    assert!(
        first
            .open_approval(&unbounded, u64::MAX)
            .await
            .unwrap()
            .is_some()
    );
    let escalation = EscalationRecord::new(json!({}), Some(held.clone()));
    assert!(
        first
            .record_escalation(&escalation, u64::MAX)
            .await
            .unwrap()
    );
    assert!(first.create_task(&task("someone-else"), 5).await.unwrap());
    let elsewhere = task(&held).for_service("elsewhere");
    assert!(first.create_task(&elsewhere, 5).await.unwrap());
    let mut elsewhere = approval(&format!("elsewhere-{held}"), store::now_ms() + MINUTE);
    elsewhere.caller = Some(held.clone());
    let elsewhere = elsewhere.for_service("elsewhere");
    assert!(first.open_approval(&elsewhere, 5).await.unwrap().is_some());
    let agents = EscalationRecord::new(json!({}), Some(held.clone()));
    assert!(first.record_escalation(&agents, 5).await.unwrap());
    let started = std::time::Instant::now();
    let waited = first.create_task(&task(&held), 5).await;
    let error = waited.expect_err("kept while another held the caller's lock");
    // SQLSTATE 55P03, lock_not_available: whatever the server's language.
    assert_eq!(
        error.code(),
        Some("55P03"),
        "the lock's wait ended by its timeout: {error}"
    );
    assert!(error.to_string().ends_with("(code 55P03)"), "{error}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(9),
        "gave up after {:?}, before the 10 s lock timeout",
        started.elapsed()
    );
    holder.rollback().await.unwrap();
    assert!(first.create_task(&task(&held), 5).await.unwrap());

    let insert = async |sql: String, at: i64| {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(at)
            .execute(&beside)
            .await
            .unwrap();
    };
    let read = async |sql: String| {
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .fetch_one(&beside)
            .await
            .unwrap()
    };
    let service = format!("unreadable-tasks-{held}");
    an_unreadable_task_ends_failed(&*first, &service, insert, read).await;
}

/// A decision, an expiry and a resolution are kept with their line of the
/// audit or not at all: with the audit failing (`down`, run beside the
/// store, makes the database refuse every line, as a full disk or a lost
/// connection would at that moment), each fails and changes nothing; once
/// `up` mends it, each is taken. A failure carries the database's `code`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn nothing_without_its_audit<F, Fut>(
    store: &dyn Store,
    sql: F,
    down: &[&'static str],
    up: &[&'static str],
    code: &str,
) where
    F: Fn(&'static str) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let now = store::now_ms();
    let pending = store
        .open_approval(&approval(&format!("audited-{now}"), now + MINUTE), u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let stale = store
        .open_approval(
            &approval(&format!("audited-stale-{now}"), now + 10),
            u64::MAX,
        )
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let escalation = EscalationRecord::new(json!({"tool": "refund"}), None);
    assert!(
        store
            .record_escalation(&escalation, u64::MAX)
            .await
            .unwrap()
    );

    for statement in down {
        sql(statement).await;
    }
    let yes = Decision::new(true, "carol", "ok");
    let error = store.decide(&pending.id, &yes).await.unwrap_err();
    // The database's own code comes with the text.
    assert_eq!(error.code(), Some(code), "the database's code: {error:?}");
    assert_eq!(
        error.to_string().matches(code).count(),
        1,
        "named once: {error}"
    );
    assert!(
        error.to_string().contains("audit cannot be written"),
        "{error}"
    );
    assert!(
        store
            .resolve_escalation(&escalation.id, "carol", "done", now)
            .await
            .is_err()
    );
    assert!(
        store
            .expire_approvals("", now + 20, &escalate)
            .await
            .is_err()
    );
    for id in [&pending.id, &stale.id] {
        let read = store.approval(id).await.unwrap().unwrap();
        assert_eq!(read.state, ApprovalState::Pending, "{id}");
    }
    assert_eq!(escalations_of(store, &stale.id).await, 0);
    let open = store
        .escalations("", None, EscalationState::Open, 10_000)
        .await
        .unwrap();
    assert!(open.iter().any(|e| e.id == escalation.id), "still open");

    for statement in up {
        sql(statement).await;
    }
    assert!(store.decide(&pending.id, &yes).await.unwrap());
    assert!(
        store
            .resolve_escalation(&escalation.id, "carol", "done", now)
            .await
            .unwrap()
    );
    let expired = store
        .expire_approvals("", now + 20, &escalate)
        .await
        .unwrap();
    assert!(expired.iter().any(|a| a.id == stale.id));
    assert_eq!(escalations_of(store, &stale.id).await, 1);
    for id in [&pending.id, &stale.id, &escalation.id] {
        assert_eq!(audit_of(store, id).await.len(), 1, "{id}");
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_nothing_is_decided_without_its_line_in_the_audit() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("store.db").display());
    let store = store::open(&url).await.unwrap();
    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    let sql = |statement: &'static str| {
        let beside = beside.clone();
        async move {
            sqlx::query(statement).execute(&beside).await.unwrap();
        }
    };
    let down = ["CREATE TRIGGER audit_down BEFORE INSERT ON te_audit \
         BEGIN SELECT RAISE(ABORT, 'the audit cannot be written'); END"];
    // 1811: SQLITE_CONSTRAINT_TRIGGER, a trigger's abort.
    let up = ["DROP TRIGGER audit_down"];
    nothing_without_its_audit(&*store, sql, &down, &up, "1811").await;
}

/// A sweep that cannot delete one kind of row sweeps the others all the
/// same, and says it failed.
#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_sweep_that_fails_on_tasks_sweeps_the_rest() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("store.db").display());
    let store = store::open(&url).await.unwrap();
    let now = store::now_ms();
    let task = TaskRecord::new("slow", json!({}), None, MINUTE);
    assert!(store.create_task(&task, u64::MAX).await.unwrap());
    assert!(store.redeem("spent-nonce", now + MINUTE).await.unwrap());
    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query(
        "CREATE TRIGGER tasks_kept BEFORE DELETE ON te_tasks \
         BEGIN SELECT RAISE(ABORT, 'tasks cannot be deleted'); END",
    )
    .execute(&beside)
    .await
    .unwrap();
    let failed = store.sweep(now + 2 * MINUTE).await.unwrap_err();
    assert!(
        failed.to_string().contains("tasks cannot be deleted"),
        "{failed}"
    );
    assert!(store.task(&task.id).await.unwrap().is_some());
    assert!(
        !store.redeemed("spent-nonce").await.unwrap(),
        "the redemption past its time swept all the same"
    );
}

/// A stopped task the store cannot read back (its arguments mangled by
/// hand) holds no other back from being taken over, and is ended failed:
/// not claimed again on the next pass, nor counted among its caller's
/// running tasks. In a SQLite file (and on Postgres, in its test).
#[cfg(feature = "sqlite")]
#[tokio::test]
async fn an_unreadable_task_holds_no_stopped_task_back() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("tasks.db").display());
    let store = store::open(&url).await.unwrap();
    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    let insert = async |sql: String, at: i64| {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(at)
            .execute(&beside)
            .await
            .unwrap();
    };
    let read = async |sql: String| {
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .fetch_one(&beside)
            .await
            .unwrap()
    };
    an_unreadable_task_ends_failed(&*store, "", insert, read).await;
}

/// The unreadable task's test, in `service` of `store`: `insert` runs an
/// insert beside the store, its one parameter bound to a time; `read`
/// answers a row of a state, a count and a text.
async fn an_unreadable_task_ends_failed(
    store: &dyn Store,
    service: &str,
    insert: impl AsyncFn(String, i64),
    read: impl AsyncFn(String) -> (String, i64, String),
) {
    let now = store::now_ms();
    let id = format!("unreadable-{service}");
    insert(
        format!(
            "INSERT INTO te_tasks (id, tool, arguments, caller, state, created_ms, updated_ms, \
             ttl_ms, holder, lease_until_ms, safe_to_repeat, runs, cancel_requested, version, \
             caller_scopes, service) VALUES ('{id}', 'slow', 'not json', 'mallory', 'working', \
             $1, $1, 60000, 'replica-dead', $1, true, 1, false, 0, '[]', '{service}')"
        ),
        now - 20,
    )
    .await;
    let stopped = TaskRecord::new("slow", json!({"n": 1}), None, 10 * MINUTE)
        .held_by("replica-dead", now - 10)
        .safe_to_repeat(true)
        .for_service(service);
    assert!(store.create_task(&stopped, u64::MAX).await.unwrap());
    let claimed = store.claim_abandoned_tasks(service, None, "replica-b", now, now + MINUTE, 10);
    let claimed = claimed.await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, stopped.id);

    let row = format!("SELECT state, runs, error FROM te_tasks WHERE id = '{id}'");
    let (state, runs, error) = read(row.clone()).await;
    assert_eq!(state, "failed");
    assert!(error.contains("could not be read back"), "{error}");
    let running = store.running_tasks(service, Some("mallory")).await.unwrap();
    assert_eq!(
        running.1, 0,
        "no longer counted among mallory's running tasks"
    );
    let later = now + 2 * MINUTE;
    let claimed =
        store.claim_abandoned_tasks(service, None, "replica-c", later, later + MINUTE, 10);
    let claimed = claimed.await.unwrap();
    assert!(claimed.iter().all(|task| task.id != id));
    assert_eq!(read(row).await.1, runs, "not claimed again");
}

/// A file whose schema a migration cannot apply (a table of the store's
/// name made by something else) is refused, saying which migration and
/// the database's answer, its code once.
#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_migration_the_file_refuses_says_which_and_the_code_once() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("foreign.db");
    let url = format!("sqlite:{}", path.display());
    let pool = sqlx::SqlitePool::connect(&format!("{url}?mode=rwc"))
        .await
        .unwrap();
    sqlx::query("CREATE TABLE te_approvals (id TEXT PRIMARY KEY)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let error = store::open(&url).await.expect_err("refused");
    let text = error.to_string();
    assert!(text.contains("while executing migration 1"), "{text}");
    assert!(text.contains("no such column"), "{text}");
    assert_eq!(error.code(), Some("1"), "{text}");
    assert_eq!(text.matches("code").count(), 1, "{text}");
}

/// Replicas started at once on a fresh file race to migrate it, and to
/// name its ledger: every one opens, and every one reads the same name.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_started_at_once_all_open_the_same_new_file() {
    let folder = tempfile::tempdir().unwrap();
    for round in 0..5 {
        let path = folder.path().join(format!("race-{round}.db"));
        let url = format!("sqlite:{}", path.display());
        let opened = futures_util::future::join_all((0..4).map(|_| store::open(&url))).await;
        let names: std::collections::HashSet<String> = opened
            .into_iter()
            .map(|store| store.unwrap().ledger().to_owned())
            .collect();
        assert_eq!(names.len(), 1, "one file, one name: {names:?}");
    }
}
