//! Calls run as tasks: MCP's tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663) on rmcp's `TaskManager`. A call the set runs as a task answers
//! at once with the task; the call — retries, guards, questions — runs in
//! the background, and `tasks/get` reads its state and, once done, its
//! result.

use std::fmt;
use std::sync::Arc;

use rmcp::task_manager::TaskManager;

use crate::mcp::definition::ToolDefinition;

/// Whether a tool's calls run as tasks, for a client that declares MCP's
/// tasks extension ([`ToolSet::tasks`](crate::mcp::ToolSet::tasks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never: the call is answered in the request.
    Never,
    /// As a task for a client that declares the extension, in the request
    /// for one that does not.
    Optional,
    /// Only as a task: a client that does not declare the extension gets
    /// the protocol's error, `-32021`, naming it.
    Required,
}

/// Which tools run as tasks.
type Picks = Arc<dyn Fn(&ToolDefinition) -> TaskSupport + Send + Sync>;

/// The tasks of a tool set, and which of its tools run as tasks.
#[derive(Clone)]
pub(crate) struct Tasks {
    manager: TaskManager,
    picks: Picks,
}

impl Tasks {
    pub(crate) fn new(
        picks: impl Fn(&ToolDefinition) -> TaskSupport + Send + Sync + 'static,
    ) -> Self {
        Tasks {
            manager: TaskManager::new(),
            picks: Arc::new(picks),
        }
    }

    /// Whether a call of the tool `definition` runs as a task.
    pub(crate) fn support(&self, definition: &ToolDefinition) -> TaskSupport {
        (self.picks)(definition)
    }

    /// The tasks, made and running.
    pub(crate) fn manager(&self) -> &TaskManager {
        &self.manager
    }
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("running", &self.manager.running_task_count())
            .finish_non_exhaustive()
    }
}
