//! One adapter conformance suite: each vendor behaviour is written once, as an async
//! fn taking a [`Vendor`], and run against every vendor by [`conformance!`], one
//! test per (behaviour, vendor) pair, so nextest names the vendor that fails
//! (`conformance::approvals::allowed_and_denied::codex`).
//!
//! [`support`] is the capability table: what each vendor does, refuses (with which
//! code) or cannot be made to show. A refused behaviour's test asserts the refusal; a
//! behaviour a vendor cannot show has no test for it, and `table::every_pair_is_tested`
//! checks that the generated tests are exactly the table's.
//!
//! - [`vendors`]: the vendors and their setup (servers, mock models, scripts);
//! - [`turns`]: text deltas, a tool call and its result, interrupt then a normal
//!   turn, usage;
//! - [`approvals`]: allowed and denied, always allowed, an interrupt withdrawing a
//!   pending request, bypass mode, plan approval;
//! - [`continuity`]: resume after a server restart, edit & resend;
//! - [`failures`]: the agent killed mid-turn, malformed output survived;
//! - [`features`]: images, a Driver delegating through the tools.

pub(crate) mod vendors;

mod approvals;
mod continuity;
mod failures;
mod features;
mod turns;

pub(crate) use vendors::Vendor;

/// What the suite runs, one variant per behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Behaviour {
    TextDeltas,
    ToolCallAndResult,
    InterruptThenANormalTurn,
    UsageReported,
    AllowedAndDenied,
    AlwaysAllowed,
    InterruptWithdrawsAPendingRequest,
    BypassAnswersItself,
    PlanApproval,
    ResumeAfterAServerRestart,
    EditAndResend,
    KilledMidTurn,
    MalformedOutputSurvived,
    Images,
    DriverDelegatesThroughTheTools,
}

/// What a vendor does with a behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Support {
    /// It shows the behaviour; the test checks it.
    Yes,
    /// It refuses: `/vendors` does not list the capability, and the request is
    /// refused with this error code; the test checks both.
    Refused {
        capability: &'static str,
        code: &'static str,
    },
    /// It does not list the capability and has no request to refuse (the agent has
    /// no MCP client for tandem's tools); the test checks `/vendors` says so.
    Lacks { capability: &'static str },
    /// The suite cannot make this vendor show it (why); no test.
    Untestable(&'static str),
}

/// The capability table: what `vendor` does with `behaviour`.
pub(crate) fn support(behaviour: Behaviour, vendor: Vendor) -> Support {
    use Behaviour as B;
    use Vendor as V;
    match (behaviour, vendor) {
        (B::EditAndResend, V::CodexAcp | V::ClaudeAcp | V::FakeAcp) => Support::Refused {
            capability: "rewind",
            code: "REWIND_NOT_SUPPORTED",
        },
        (B::Images, V::FakeAcp) => Support::Refused {
            capability: "images",
            code: "ATTACHMENT_NOT_SUPPORTED",
        },
        (B::DriverDelegatesThroughTheTools, V::FakeAcp) => Support::Lacks {
            capability: "tools",
        },
        (B::PlanApproval, V::Claude) => Support::Yes,
        (B::PlanApproval, _) => {
            Support::Untestable("only Claude Code asks to leave plan mode (`ExitPlanMode`)")
        }
        (B::BypassAnswersItself, V::CodexAcp) => Support::Untestable(
            "configured as README says (approval policy in `args`), codex-acp offers no modes",
        ),
        (B::UsageReported, V::ClaudeAcp) => {
            Support::Untestable("the pinned claude-code-acp reports no usage (`usage_update`)")
        }
        (B::KilledMidTurn | B::MalformedOutputSurvived, V::Scripted) => {
            Support::Untestable("the scripted agent runs in the server: no process, no output")
        }
        (B::MalformedOutputSurvived, V::Codex | V::CodexAcp | V::ClaudeAcp) => {
            Support::Untestable("the pinned CLI cannot be made to write a malformed line")
        }
        _ => Support::Yes,
    }
}

/// One test per listed vendor for the behaviour `$behaviour` (an async fn of this
/// module taking a [`Vendor`]), in a module of the same name, plus `VENDORS`, the
/// vendors listed, for the table's check. Real vendors' tests are ignored without
/// their pinned tool (forced on under CI).
macro_rules! conformance {
    ($behaviour:ident: $($vendor:ident),+ $(,)?) => {
        /// The behaviour's tests, one per vendor.
        pub(crate) mod $behaviour {
            #[allow(unused_imports)]
            use $crate::conformance::Vendor;
            /// The vendors this behaviour runs against.
            pub(crate) const VENDORS: &[Vendor] = &[$($crate::conformance::conformance!(@vendor $vendor)),+];
            $($crate::conformance::conformance!(@test $behaviour $vendor);)+
        }
    };
    (@vendor scripted) => { Vendor::Scripted };
    (@vendor codex) => { Vendor::Codex };
    (@vendor claude) => { Vendor::Claude };
    (@vendor codex_acp) => { Vendor::CodexAcp };
    (@vendor claude_acp) => { Vendor::ClaudeAcp };
    (@vendor fake_acp) => { Vendor::FakeAcp };
    (@test $behaviour:ident scripted) => {
        #[actix_rt::test]
        async fn scripted() {
            super::$behaviour(Vendor::Scripted).await;
        }
    };
    (@test $behaviour:ident codex) => {
        #[actix_rt::test]
        #[cfg_attr(not(has_codex), ignore = "the pinned codex CLI is not installed")]
        async fn codex() {
            super::$behaviour(Vendor::Codex).await;
        }
    };
    (@test $behaviour:ident claude) => {
        #[actix_rt::test]
        #[cfg_attr(not(has_claude), ignore = "the pinned claude CLI is not installed")]
        async fn claude() {
            super::$behaviour(Vendor::Claude).await;
        }
    };
    (@test $behaviour:ident codex_acp) => {
        #[actix_rt::test]
        #[cfg_attr(not(has_codex_acp), ignore = "the pinned codex-acp agent is not installed")]
        async fn codex_acp() {
            super::$behaviour(Vendor::CodexAcp).await;
        }
    };
    (@test $behaviour:ident claude_acp) => {
        #[actix_rt::test]
        #[cfg_attr(
            not(has_claude_acp),
            ignore = "the pinned claude-code-acp agent is not installed"
        )]
        async fn claude_acp() {
            super::$behaviour(Vendor::ClaudeAcp).await;
        }
    };
    (@test $behaviour:ident fake_acp) => {
        #[actix_rt::test]
        async fn fake_acp() {
            super::$behaviour(Vendor::FakeAcp).await;
        }
    };
}
pub(crate) use conformance;

/// When the table says `vendor` refuses `behaviour`, asserts the capability is not
/// listed and returns the code a request must be refused with; `None` when the
/// vendor supports it.
pub(crate) async fn assert_not_listed(
    rig: &vendors::Rig,
    vendor: Vendor,
    behaviour: Behaviour,
) -> Option<&'static str> {
    let (capability, code) = match support(behaviour, vendor) {
        Support::Refused { capability, code } => (capability, Some(code)),
        Support::Lacks { capability } => (capability, None),
        Support::Yes => return None,
        other => panic!("{vendor:?} does not refuse {behaviour:?}: {other:?}"),
    };
    let listed = rig.capabilities(vendor).await;
    assert!(
        !listed.iter().any(|c| c == capability),
        "{vendor:?} lists {capability}: {listed:?}"
    );
    code
}

/// The table's check: every behaviour's generated tests are exactly the vendors
/// the table does not call untestable.
mod table {
    use super::{support, Behaviour, Support, Vendor};

    /// Each behaviour with the vendors its tests run against.
    fn generated() -> Vec<(Behaviour, &'static [Vendor])> {
        use super::{approvals as a, continuity as c, failures as f, features as x, turns as t};
        vec![
            (Behaviour::TextDeltas, t::text_deltas::VENDORS),
            (
                Behaviour::ToolCallAndResult,
                t::tool_call_and_result::VENDORS,
            ),
            (
                Behaviour::InterruptThenANormalTurn,
                t::interrupt_then_a_normal_turn::VENDORS,
            ),
            (Behaviour::UsageReported, t::usage_reported::VENDORS),
            (Behaviour::AllowedAndDenied, a::allowed_and_denied::VENDORS),
            (Behaviour::AlwaysAllowed, a::always_allowed::VENDORS),
            (
                Behaviour::InterruptWithdrawsAPendingRequest,
                a::interrupt_withdraws_a_pending_request::VENDORS,
            ),
            (
                Behaviour::BypassAnswersItself,
                a::bypass_answers_itself::VENDORS,
            ),
            (Behaviour::PlanApproval, a::plan_approval::VENDORS),
            (
                Behaviour::ResumeAfterAServerRestart,
                c::resume_after_a_server_restart::VENDORS,
            ),
            (Behaviour::EditAndResend, c::edit_and_resend::VENDORS),
            (Behaviour::KilledMidTurn, f::killed_mid_turn::VENDORS),
            (
                Behaviour::MalformedOutputSurvived,
                f::malformed_output_survived::VENDORS,
            ),
            (Behaviour::Images, x::images::VENDORS),
            (
                Behaviour::DriverDelegatesThroughTheTools,
                x::driver_delegates_through_the_tools::VENDORS,
            ),
        ]
    }

    #[test]
    fn every_pair_is_tested() {
        for (behaviour, tested) in generated() {
            for vendor in Vendor::ALL {
                let testable = !matches!(support(behaviour, vendor), Support::Untestable(_));
                assert_eq!(
                    tested.contains(&vendor),
                    testable,
                    "{behaviour:?} on {vendor:?}: the table says {:?}",
                    support(behaviour, vendor)
                );
            }
        }
    }
}
