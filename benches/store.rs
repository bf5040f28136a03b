//! Figure 12 of BENCHMARKS.md: what the store costs.
//!
//! - 12a: a call that uses neither tasks nor approvals, through a `ToolSet`
//!   without a store, with an in-memory store and with a SQLite one;
//! - 12e: a task kept and finished, its caller's running tasks counted in
//!   the same step (`create_task` with a bound, as `ToolSet::max_tasks`
//!   asks) against kept whatever runs (`u64::MAX`, one plain statement),
//!   with 50 other callers' tasks running, in memory, in SQLite and, with
//!   `TOOL_ENVELOPE_BENCH_POSTGRES=postgres://…`, in Postgres (a database
//!   of its own: 12b leaves its tasks running, and a count reads them all);
//! - 12b: a task made and read back (`create_task` + `task`), in the same
//!   stores;
//! - 12c: from an approver's decision (`ToolSet::decide`, what the inbox's
//!   Approve button does) to the tool's reply kept in the store, run by the
//!   background runner: p50 and p99 over 200 approvals, printed;
//! - 12d: the inbox page with 1,000 pending approvals, over HTTP.
//!
//! `cargo bench --bench store --features rmcp,sqlite,postgres,inbox`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use serde_json::json;
use tool_envelope::guard::{Approvers, Blocked, Caller, ToolCall};
use tool_envelope::mcp::{BearerAuth, HttpOptions, Inbox, ToolContext, ToolSet};
use tool_envelope::store::{
    self, ApprovalState, MemoryStore, Store, TaskRecord, TaskState, TaskUpdate,
};
use tool_envelope::{ErrorEnvelope, tool};

/// Look up an order.
#[tool(read_only)]
fn lookup(order: String) -> Result<String, ErrorEnvelope> {
    Ok(format!("order {order}: shipped"))
}

fn cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 cap"))
                .unless_approved_by(Approvers::scope("refunds:approve")),
        );
    }
    Ok(())
}

/// Refund an order.
#[tool(destructive, guard = cap)]
fn refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    Ok(format!("Refunded ${amount} on {order}"))
}

fn sqlite_url(name: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "tool-envelope-bench-{name}-{}.db",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    format!("sqlite:{}", path.display())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut criterion = Criterion::default().configure_from_args();

    // 12a: the same call, with and without a store the call never uses.
    let plain = ToolSet::new().tool::<lookup>();
    let memory = plain.clone().store(Arc::new(MemoryStore::new()));
    let sqlite = runtime.block_on(store::open(&sqlite_url("plain"))).unwrap();
    let with_sqlite = plain.clone().store(sqlite);
    let mut group = criterion.benchmark_group("store_plain_call");
    group.throughput(Throughput::Elements(1));
    for (name, tools) in [
        ("no_store", &plain),
        ("memory_store", &memory),
        ("sqlite_store", &with_sqlite),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let reply = runtime
                    .block_on(tools.call("lookup", json!({"order": "O-1"})))
                    .unwrap();
                assert!(!reply.is_error);
                reply
            });
        });
    }
    group.finish();

    let mut stores: Vec<(&str, Arc<dyn Store>)> = vec![
        ("memory", Arc::new(MemoryStore::new())),
        (
            "sqlite",
            runtime.block_on(store::open(&sqlite_url("tasks"))).unwrap(),
        ),
    ];
    if let Ok(url) = std::env::var("TOOL_ENVELOPE_BENCH_POSTGRES") {
        stores.push(("postgres", runtime.block_on(store::open(&url)).unwrap()));
    }

    // 12e, first, while the stores hold only what it makes: a task kept and
    // finished, counted against not, beside 50 other callers' running tasks
    // (what a count reads: the running tasks, every caller's, for the
    // store-wide bound as well).
    let task = |caller: &str| {
        TaskRecord::new(
            "lookup",
            json!({"order": "O-1"}),
            Some(caller.into()),
            60_000,
        )
        .held_by("bench", store::now_ms() + 86_400_000)
    };
    for (_, store) in &stores {
        runtime.block_on(async {
            for other in 0..50 {
                let running = task(&format!("other-{other}"));
                assert!(store.create_task(&running, u64::MAX).await.unwrap());
            }
        });
    }
    // The caller is new each run: 12b's tasks, left running in a database
    // a run before, are "agent"'s.
    let caller = format!("counted-{}", store::now_ms());
    let mut group = criterion.benchmark_group("store_task_keep_counted");
    group.throughput(Throughput::Elements(1));
    for (name, store) in &stores {
        for (bound, most_running) in [("unbounded", u64::MAX), ("counted", 8)] {
            group.bench_function(format!("{name}_{bound}"), |b| {
                b.iter(|| {
                    runtime.block_on(async {
                        let kept = task(&caller);
                        assert!(store.create_task(&kept, most_running).await.unwrap());
                        let done = TaskUpdate::finish(TaskState::Completed, Some(json!("ok")));
                        assert!(store.update_task(&kept.id, "bench", &done).await.unwrap());
                    });
                });
            });
        }
    }
    group.finish();

    // 12b: a task made and read back.
    let mut group = criterion.benchmark_group("store_task_create_get");
    group.throughput(Throughput::Elements(1));
    for (name, store) in &stores {
        group.bench_function(*name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let task = TaskRecord::new(
                        "lookup",
                        json!({"order": "O-1"}),
                        Some("agent".into()),
                        60_000,
                    )
                    .held_by("bench", store::now_ms() + 86_400_000);
                    assert!(store.create_task(&task, u64::MAX).await.unwrap());
                    store.task(&task.id).await.unwrap().unwrap()
                })
            });
        });
    }
    group.finish();

    // 12c: decision to result, by the background runner.
    let agent = Caller::new("agent", ["refunds:write"]);
    let approver = Caller::new("approver", ["refunds:approve"]);
    // Fresh stores: the in-memory one above holds every task 12b made,
    // which the runner's look for abandoned tasks would walk.
    let mut fresh: Vec<(&str, Arc<dyn Store>)> = vec![
        ("memory", Arc::new(MemoryStore::new())),
        (
            "sqlite",
            runtime.block_on(store::open(&sqlite_url("click"))).unwrap(),
        ),
    ];
    if let Some((_, postgres)) = stores.iter().find(|(name, _)| *name == "postgres") {
        fresh.push(("postgres", Arc::clone(postgres)));
    }
    for (name, store) in &fresh {
        let tools = ToolSet::new().tool::<refund>().store(Arc::clone(store));
        let mut samples = Vec::new();
        for n in 0..200 {
            let arguments =
                json!({"order": format!("B-{name}-{n}-{}", store::now_ms()), "amount": 620});
            let context = ToolContext::detached().with_caller(agent.clone());
            let reply = runtime
                .block_on(tools.call_with("refund", arguments, context))
                .unwrap();
            let waiting = reply.structured_content.unwrap();
            let ticket = waiting["escalation"]["ticket"]["id"]
                .as_str()
                .unwrap()
                .to_owned();
            let elapsed = runtime.block_on(async {
                let clicked = Instant::now();
                tools.decide(&ticket, &approver, true, "").await.unwrap();
                loop {
                    let approval = store.approval(&ticket).await.unwrap().unwrap();
                    if approval.state == ApprovalState::Done {
                        break clicked.elapsed();
                    }
                    tokio::task::yield_now().await;
                }
            });
            samples.push(elapsed);
        }
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
        println!(
            "store_click_to_result/{name}: p50 {:.2?}, p99 {:.2?}, max {:.2?} over {} approvals",
            at(0.5),
            at(0.99),
            samples[samples.len() - 1],
            samples.len()
        );
    }

    // 12d: the inbox with 1,000 pending approvals, in memory and in a
    // SQLite file (whose queries the page's lists are).
    let http = reqwest::Client::new();
    let mut group = criterion.benchmark_group("store_inbox_page");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    let inbox_stores: [(&str, Arc<dyn Store>); 2] = [
        ("memory", Arc::new(MemoryStore::new())),
        (
            "sqlite",
            runtime.block_on(store::open(&sqlite_url("inbox"))).unwrap(),
        ),
    ];
    for (name, store) in inbox_stores {
        let tools = ToolSet::new()
            .tool::<refund>()
            .store(Arc::clone(&store))
            .approvals_in_background(false)
            // One caller's thousand: above the default bound.
            .max_waiting_approvals(1000);
        for n in 0..1000 {
            let arguments = json!({"order": format!("P-{n}"), "amount": 501 + n});
            let context = ToolContext::detached().with_caller(agent.clone());
            runtime
                .block_on(tools.call_with("refund", arguments, context))
                .unwrap();
        }
        let (base, session) = runtime.block_on(serve_inbox(&tools));
        group.bench_function(format!("1000_pending_{name}"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let page = http
                        .get(format!("{base}/inbox"))
                        .header("cookie", &session)
                        .send()
                        .await
                        .unwrap()
                        .text()
                        .await
                        .unwrap();
                    assert!(page.contains("P-999"));
                    page.len()
                })
            });
        });
    }
    group.finish();
    criterion.final_summary();
}

/// Serves `tools`'s inbox on a loopback port and signs an approver in: the
/// base URL and the session cookie.
async fn serve_inbox(tools: &ToolSet) -> (String, String) {
    async fn validate(token: String) -> Option<Caller> {
        (token == "approver-token").then(|| Caller::new("approver", ["refunds:approve"]))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let auth = BearerAuth::new(format!("{base}/mcp"), validate);
    let inbox = Inbox::new(tools, auth.clone(), "refunds:approve");
    let served = tools.clone();
    tokio::spawn(async move {
        HttpOptions::new()
            .require_bearer(auth)
            .inbox(inbox)
            .serve(listener, served)
            .await
    });
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let form = http.get(format!("{base}/inbox")).send().await.unwrap();
    let nonce = cookie(&form, "tool_envelope_sign_in");
    let page = form.text().await.unwrap();
    let start = page.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = &page[start..][..page[start..].find('"').unwrap()];
    let signed = http
        .post(format!("{base}/inbox/sign-in"))
        .header("cookie", nonce)
        .form(&[("token", "approver-token"), ("csrf", csrf)])
        .send()
        .await
        .unwrap();
    (base, cookie(&signed, "tool_envelope_inbox"))
}

fn cookie(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(|value| value.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")))
        .unwrap()
        .to_owned()
}
