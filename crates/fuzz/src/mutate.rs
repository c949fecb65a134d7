//! A byte mutator in the style of libFuzzer's: bit flips, interesting values, inserts,
//! deletes, copies and splices. Deterministic for a given generator state.

use rand::{Rng, RngExt};

/// Bytes that often sit at boundaries (signs, lengths, protobuf wire types).
const INTERESTING: [u8; 10] = [0, 1, 2, 7, 8, 0x7f, 0x80, 0xfe, 0xff, b'\n'];

/// Varints that stress length and size fields: 0, 1, 2^31, 2^32 - 1, 2^63 - 1, -1.
const VARINTS: [u64; 7] = [
    0,
    1,
    127,
    1 << 31,
    u32::MAX as u64,
    i64::MAX as u64,
    u64::MAX,
];

/// Apply one to four random edits to `data`, keeping it at most `max_len` bytes.
/// `other` is a second corpus entry to splice from.
pub fn mutate(rng: &mut impl Rng, data: &mut Vec<u8>, other: &[u8], max_len: usize) {
    let n = rng.random_range(1..=4);
    for _ in 0..n {
        edit(rng, data, other);
    }
    data.truncate(max_len);
}

fn edit(rng: &mut impl Rng, d: &mut Vec<u8>, other: &[u8]) {
    let len = d.len();
    let mut r = |n: usize| rng.random_range(0..n.max(1));
    match r(9) {
        0 if len > 0 => {
            let i = r(len);
            d[i] ^= 1 << r(8);
        }
        1 if len > 0 => {
            let i = r(len);
            d[i] = INTERESTING[r(INTERESTING.len())];
        }
        2 if len > 0 => {
            let i = r(len);
            d[i] = r(256) as u8;
        }
        3 => {
            let i = r(len + 1).min(len);
            let k = 1 + r(16);
            let bytes: Vec<u8> = (0..k).map(|_| r(256) as u8).collect();
            d.splice(i..i, bytes);
        }
        4 if len > 0 => {
            let i = r(len);
            let k = (1 + r(32)).min(len - i);
            d.drain(i..i + k);
        }
        5 if len > 0 => {
            // Copy a chunk of itself elsewhere (repeats a field or node).
            let i = r(len);
            let k = (1 + r(64)).min(len - i);
            let chunk = d[i..i + k].to_vec();
            let j = r(len + 1).min(len);
            d.splice(j..j, chunk);
        }
        6 if !other.is_empty() => {
            // Splice: our head, the other's tail.
            let i = r(len + 1).min(len);
            let j = r(other.len());
            d.truncate(i);
            d.extend_from_slice(&other[j..]);
        }
        7 => {
            let i = r(len + 1).min(len);
            let mut v = VARINTS[r(VARINTS.len())];
            let mut enc = Vec::new();
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    enc.push(b);
                    break;
                }
                enc.push(b | 0x80);
            }
            let end = (i + enc.len()).min(len);
            d.splice(i..end, enc);
        }
        _ if len > 1 => {
            // Truncate.
            let i = r(len);
            d.truncate(i);
        }
        _ => d.push(r(256) as u8),
    }
}
