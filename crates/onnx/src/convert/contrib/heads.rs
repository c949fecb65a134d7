//! Slicing and head layout shared by the attention converters.

use super::super::dec::Dec;
use crate::error::Result;
use pimkit_ir::{Op, SliceAxis, ValueId};

/// `x`[..] along `axis` from `start` to `end` (step 1).
pub(super) fn slice(
    d: &mut Dec,
    x: ValueId,
    axis: usize,
    start: usize,
    end: usize,
) -> Result<ValueId> {
    d.op(
        Op::Slice {
            axes: vec![SliceAxis {
                axis,
                start: start as i64,
                end: end as i64,
                step: 1,
            }],
        },
        &[x],
    )
}

/// [B, S, N·H] as [B, N, S, H].
pub(super) fn heads_first(
    d: &mut Dec,
    x: ValueId,
    batch: usize,
    seq: usize,
    heads: usize,
    hd: usize,
) -> Result<ValueId> {
    let x = d.reshape(x, vec![batch, seq, heads, hd])?;
    d.transpose(x, vec![0, 2, 1, 3])
}
