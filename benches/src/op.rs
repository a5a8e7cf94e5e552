//! The operations a benchmark row can measure, with their JSON names (docs/CONVENTIONS.md).

use serde::{Deserialize, Serialize};

/// One benchmarked operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// The WGSL copy shader: the bandwidth reference. Bytes: dense read + dense write.
    Copy,
    /// Codec compress. Bytes: dense read + mask + values written.
    Compress,
    /// Codec decompress. Bytes: mask + values read + dense written.
    Decompress,
    /// Fused forward (issue 3). Bytes: read z; write a, mask, values.
    FusedForward,
    /// Fused backward (issue 3). Bytes: read mask, values, g; write dL/dz (and a when asked).
    FusedBackward,
    /// Plain dense ReLU² forward. Bytes: read z, write a.
    PlainForward,
    /// Plain dense ReLU² backward. Bytes: read r and g, write dL/dz.
    PlainBackward,
}

impl Op {
    /// Every op, in report order.
    pub const ALL: [Op; 7] = [
        Op::Copy,
        Op::Compress,
        Op::Decompress,
        Op::FusedForward,
        Op::FusedBackward,
        Op::PlainForward,
        Op::PlainBackward,
    ];

    /// The name used in JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Compress => "compress",
            Op::Decompress => "decompress",
            Op::FusedForward => "fused_forward",
            Op::FusedBackward => "fused_backward",
            Op::PlainForward => "plain_forward",
            Op::PlainBackward => "plain_backward",
        }
    }

    /// Parses [`Op::name`] (case-insensitive; `-` accepted for `_`).
    pub fn from_name(s: &str) -> Option<Op> {
        let s = s.trim().to_ascii_lowercase().replace('-', "_");
        Op::ALL.into_iter().find(|o| o.name() == s)
    }

    /// Whether sign packing changes what this op does (only ops that read or write a compressed stream).
    pub fn uses_sign_pack(self) -> bool {
        matches!(self, Op::Compress | Op::Decompress | Op::FusedForward | Op::FusedBackward)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_json() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
            assert_eq!(serde_json::to_string(&op).unwrap(), format!("\"{}\"", op.name()));
        }
        assert_eq!(Op::from_name("fused-forward"), Some(Op::FusedForward));
        assert_eq!(Op::from_name("nope"), None);
    }
}
