//! Tool names and definitions. The shapes live in the protocol crate
//! (`tandem_protocol::tools`): each tool's input schema is generated from its
//! argument type there, so the schema `tools/list` serves and the parser agree.

pub use tandem_protocol::tools::{
    def, NoParams, ALL, ANSWER_WORKER, APPROVE_WORKER, ASK_DRIVER, CHECK_SPAWNED_SESSIONS,
    CLOSE_PARTNER, INTERRUPT_PARTNER, PROPOSE_WORKER, READ_HANDOFF_SOURCE, READ_PARTNER,
    SEND_TO_PARTNER, SPAWN_SESSIONS,
};
