//! The live side of a [`ToolContext`](crate::mcp::ToolContext): one
//! `tools/call` request of an rmcp session — its cancellation, its client,
//! its progress token — and MCP's log levels in rmcp's shape.
//!
//! rmcp marks logging deprecated: MCP's 2026-07-28 revision drops it. The
//! clients in use today negotiate 2025-11-25, where it is how a server talks
//! to its user.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::mcp::context::{Boxed, LiveSide};
use crate::mcp::log::{LogLevel, LogThreshold};
use crate::mcp::server::rounds::{Asking, has_rounds};
use crate::retry::RetryNotice;

impl From<LoggingLevel> for LogLevel {
    fn from(level: LoggingLevel) -> Self {
        match level {
            LoggingLevel::Debug => LogLevel::Debug,
            LoggingLevel::Info => LogLevel::Info,
            LoggingLevel::Notice => LogLevel::Notice,
            LoggingLevel::Warning => LogLevel::Warning,
            LoggingLevel::Error => LogLevel::Error,
            LoggingLevel::Critical => LogLevel::Critical,
            LoggingLevel::Alert => LogLevel::Alert,
            LoggingLevel::Emergency => LogLevel::Emergency,
        }
    }
}

impl From<LogLevel> for LoggingLevel {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Debug => LoggingLevel::Debug,
            LogLevel::Info => LoggingLevel::Info,
            LogLevel::Notice => LoggingLevel::Notice,
            LogLevel::Warning => LoggingLevel::Warning,
            LogLevel::Error => LoggingLevel::Error,
            LogLevel::Critical => LoggingLevel::Critical,
            LogLevel::Alert => LoggingLevel::Alert,
            LogLevel::Emergency => LoggingLevel::Emergency,
        }
    }
}

/// The live side of a [`ToolContext`](crate::mcp::ToolContext): one `tools/call` request.
pub(crate) struct LiveRequest {
    pub(crate) cancel: CancellationToken,
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The logger name of the request's messages: the tool's name, as the
    /// request gave it.
    logger: Cow<'static, str>,
    threshold: Arc<LogThreshold>,
    /// On 2026-07-28, the level the request's `_meta` asked for: nothing is
    /// logged without one.
    request_level: Option<Option<LogLevel>>,
    /// How the request asks its client.
    pub(crate) asking: Asking,
    /// The last progress sent; held while sending, so that notifications go
    /// out in order.
    last_progress: Mutex<Option<f64>>,
    /// Who called, as the server's token validator said.
    pub(crate) caller: Option<Arc<Caller>>,
    /// The task the call runs as: its `tasks/cancel` is the call's
    /// cancellation, as the tool sees it.
    task: Option<TaskContext>,
}

/// Who made the HTTP request of `context`, as the tool set's token
/// validator found it: `None` over stdio, or without a validator.
pub(crate) fn caller(context: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    parts.extensions.get::<Arc<Caller>>().cloned()
}

impl LiveRequest {
    /// The live side of the request `context`, which it keeps: what the
    /// request says of its client is read from it when first asked for.
    pub(crate) fn new(
        context: RequestContext<RoleServer>,
        tool: Cow<'static, str>,
        threshold: &Arc<LogThreshold>,
        mut asking: Asking,
    ) -> Self {
        let request_level =
            has_rounds(&context).then(|| context.meta.log_level().map(LogLevel::from));
        let cancel = context.ct.clone();
        let peer = context.peer.clone();
        let progress_token = context.meta.get_progress_token();
        let caller = caller(&context);
        asking.read_client_from(context);
        LiveRequest {
            cancel,
            peer,
            progress_token,
            logger: tool,
            threshold: Arc::clone(threshold),
            request_level,
            asking,
            last_progress: Mutex::new(None),
            caller,
            task: None,
        }
    }

    /// The live side of a call run as a task: no progress (the request that
    /// made the task was answered with it), no log messages, cancelled from
    /// outside by `tasks/cancel` to `task`. It keeps of the request that
    /// made it its `peer` and `caller`, not the request (its headers)
    /// itself.
    pub(crate) fn task(
        (peer, caller): (Peer<RoleServer>, Option<Arc<Caller>>),
        tool: &str,
        threshold: &Arc<LogThreshold>,
        (task, asking): (TaskContext, Asking),
    ) -> Self {
        LiveRequest {
            cancel: CancellationToken::new(),
            peer,
            progress_token: None,
            logger: Cow::Owned(tool.to_owned()),
            threshold: Arc::clone(threshold),
            request_level: Some(None),
            asking,
            last_progress: Mutex::new(None),
            caller,
            task: Some(task),
        }
    }

    /// The name of the tool called.
    pub(crate) fn tool(&self) -> &str {
        &self.logger
    }

    /// The least severe level sent: on 2026-07-28 the request's own, and
    /// none without one; before, the session's.
    fn threshold(&self) -> Option<LogLevel> {
        match self.request_level {
            Some(level) => level,
            None => Some(self.threshold.get()),
        }
    }

    pub(crate) async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> bool {
        let Some(token) = &self.progress_token else {
            return false;
        };
        if !progress.is_finite() || total.is_some_and(|total| !total.is_finite()) {
            return false;
        }
        let mut last = self.last_progress.lock().await;
        if last.is_some_and(|last| progress <= last) || self.cancel.is_cancelled() {
            return false;
        }
        let mut param = ProgressNotificationParam::new(token.clone(), progress);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(message) = message {
            param = param.with_message(message);
        }
        let sent = self.peer.notify_progress(param).await.is_ok();
        if sent {
            *last = Some(progress);
        }
        sent
    }

    /// A local retry, as one step of progress: the step after the last one
    /// sent, with the attempt, the category, the reason and the delay.
    pub(crate) async fn retrying(&self, notice: &RetryNotice) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut last = self.last_progress.lock().await;
        if self.cancel.is_cancelled() {
            return;
        }
        let progress = last.map_or(f64::from(notice.attempt), |last| last.floor() + 1.0);
        let reason = notice
            .reason
            .as_deref()
            .map_or_else(String::new, |reason| format!(", {reason}"));
        let message = format!(
            "attempt {} of {} failed ({}{reason}); retrying in {} ms",
            notice.attempt,
            notice.max_attempts,
            notice.category,
            notice.delay.as_millis()
        );
        let param = ProgressNotificationParam::new(token.clone(), progress).with_message(message);
        if self.peer.notify_progress(param).await.is_ok() {
            *last = Some(progress);
        }
    }

    pub(crate) async fn log(&self, level: LogLevel, data: serde_json::Value) -> bool {
        let Some(threshold) = self.threshold() else {
            return false;
        };
        if level < threshold || self.cancel.is_cancelled() {
            return false;
        }
        let param =
            LoggingMessageNotificationParam::new(level.into(), data).with_logger(self.tool());
        // Logging is deprecated in MCP's newest revision, and what most
        // clients still show; sent where the client negotiated it.
        #[allow(deprecated)]
        let sent = self.peer.notify_logging_message(param).await;
        sent.is_ok()
    }
}

/// The request as a tool's context sees it.
impl LiveSide for LiveRequest {
    fn is_cancelled(&self) -> bool {
        match &self.task {
            Some(task) => task.is_cancel_requested(),
            None => self.cancel.is_cancelled(),
        }
    }

    fn cancelled(&self) -> Boxed<'_, ()> {
        match &self.task {
            // rmcp's completes as well when the task is let go, or its
            // manager stops: a cancel only when one was asked for.
            Some(task) => Box::pin(async move {
                task.cancelled().await;
                if !task.is_cancel_requested() {
                    std::future::pending::<()>().await;
                }
            }),
            None => Box::pin(self.cancel.cancelled()),
        }
    }

    fn stops(&self) -> Boxed<'_, ()> {
        match &self.task {
            // Its task stops it, once what it waits for is withdrawn.
            Some(_) => Box::pin(std::future::pending()),
            None => Box::pin(self.cancel.cancelled()),
        }
    }

    fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    fn progress<'a>(
        &'a self,
        progress: f64,
        total: Option<f64>,
        message: Option<&'a str>,
    ) -> Boxed<'a, bool> {
        Box::pin(LiveRequest::progress(self, progress, total, message))
    }

    fn log(&self, level: LogLevel, data: serde_json::Value) -> Boxed<'_, bool> {
        Box::pin(async move { LiveRequest::log(self, level, data).await })
    }

    fn retrying<'a>(&'a self, notice: &'a RetryNotice) -> Boxed<'a, ()> {
        Box::pin(LiveRequest::retrying(self, notice))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
