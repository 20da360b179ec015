//! Ids every layer names, one type per kind of thing ([`SessionId`], [`PairId`],
//! [`TurnId`], [`DelegationId`], [`RequestId`], [`UserId`], [`UploadId`], [`VendorId`]).
//! They are the wire's own types (`tandem_protocol::ids`); this leaf names them for the
//! crate, so the stored record (`record`) names a vendor without importing the
//! adapters.

pub use tandem_protocol::ids::{
    DelegationId, PairId, RequestId, SessionId, TurnId, UploadId, UserId, VendorId,
};
