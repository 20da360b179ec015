//! `loop.start` and `loop.stop`: the checks of a loop's settings that need the
//! server (the judge's vendor), then the session's actor runs it
//! (`crate::session::StartLoop`).

use tandem_protocol::loops::{
    LoopCheck, LoopStartParams, LoopStartResult, LoopStopParams, LoopStopResult, MAX_CHECK_TIMEOUT,
    MAX_COOLDOWN_SECONDS, MAX_ITERATIONS, MAX_TEXT_CHARS,
};

use super::ScheduleService;
use crate::access::Principal;
use crate::adapter::VendorId;
use crate::error::RuntimeError;
use crate::session::{StartLoop, StopLoop};

/// `text` trimmed, refused when empty or longer than [`MAX_TEXT_CHARS`].
fn text(field: &str, text: &str) -> Result<String, RuntimeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(RuntimeError::unusable(format!("{field} is empty")));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(RuntimeError::unusable(format!(
            "{field} is longer than {MAX_TEXT_CHARS} characters"
        )));
    }
    Ok(text.to_string())
}

impl ScheduleService {
    /// `loop.start`: refused unless the check is exactly one of a command and a
    /// judge (of an installed vendor), the numbers are in range, and the session is
    /// idle with no loop running.
    pub async fn start_loop(
        &self,
        who: &Principal,
        params: LoopStartParams,
    ) -> Result<LoopStartResult, RuntimeError> {
        let handle = self.access.drivable(who, &params.session_id)?;
        let goal = text("goal", &params.goal)?;
        if !(1..=MAX_ITERATIONS).contains(&params.max_iterations) {
            return Err(RuntimeError::unusable(format!(
                "maxIterations must be 1 to {MAX_ITERATIONS}"
            )));
        }
        let cooldown_seconds = params.cooldown_seconds.unwrap_or(0);
        if cooldown_seconds > MAX_COOLDOWN_SECONDS {
            return Err(RuntimeError::unusable(format!(
                "cooldownSeconds must be at most {MAX_COOLDOWN_SECONDS}"
            )));
        }
        let check = self.loop_check(params.check)?;
        let info = handle
            .ask(StartLoop {
                goal,
                check,
                max_iterations: params.max_iterations,
                cooldown_seconds,
            })
            .await??;
        Ok(LoopStartResult {
            session_id: params.session_id,
            loop_info: info,
        })
    }

    /// `loop.stop`: ends the session's loop.
    pub async fn stop_loop(
        &self,
        who: &Principal,
        params: LoopStopParams,
    ) -> Result<LoopStopResult, RuntimeError> {
        let (loop_id, iterations) = self
            .access
            .drivable(who, &params.session_id)?
            .ask(StopLoop)
            .await??;
        Ok(LoopStopResult {
            session_id: params.session_id,
            loop_id,
            iterations,
        })
    }

    /// The check as the loop keeps it: one of the two, trimmed, its vendor known.
    fn loop_check(&self, check: LoopCheck) -> Result<LoopCheck, RuntimeError> {
        match (&check.command, &check.judge) {
            (Some(command), None) => {
                let timeout = check.timeout_seconds;
                if timeout.is_some_and(|t| !(1..=MAX_CHECK_TIMEOUT).contains(&t)) {
                    return Err(RuntimeError::unusable(format!(
                        "check.timeoutSeconds must be 1 to {MAX_CHECK_TIMEOUT}"
                    )));
                }
                Ok(LoopCheck {
                    command: Some(text("check.command", command)?),
                    timeout_seconds: timeout,
                    judge: None,
                })
            }
            (None, Some(judge)) => {
                if check.timeout_seconds.is_some() {
                    return Err(RuntimeError::unusable(
                        "check.timeoutSeconds is for a command, not a judge",
                    ));
                }
                let vendor = judge
                    .vendor
                    .as_deref()
                    .map(str::trim)
                    .filter(|v| !v.is_empty());
                if let Some(vendor) = vendor {
                    let spec = self.catalog.get(&VendorId::from(vendor)).ok_or_else(|| {
                        RuntimeError::unusable(format!("unknown vendor `{vendor:.64}`"))
                    })?;
                    if !spec.installed {
                        return Err(RuntimeError::VendorNotInstalled(vendor.to_string()));
                    }
                }
                Ok(LoopCheck {
                    command: None,
                    timeout_seconds: None,
                    judge: Some(tandem_protocol::loops::JudgeCheck {
                        vendor: vendor.map(str::to_string),
                        prompt: text("check.judge.prompt", &judge.prompt)?,
                    }),
                })
            }
            _ => Err(RuntimeError::unusable(
                "check must have exactly one of `command` and `judge`",
            )),
        }
    }
}
