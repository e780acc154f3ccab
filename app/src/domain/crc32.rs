//! CRC-32 (IEEE 802.3, as Tcl's `crc32` and zlib compute it), bit by bit: no 1 KiB-per-slice
//! lookup tables in the browser bundle (the request tester hashes one client address per
//! answer; a table-driven crate put 16 KB of incompressible tables in its chunk).

/// The reflected IEEE polynomial.
const POLY: u32 = 0xEDB8_8320;

/// The CRC-32 of `bytes`.
pub fn hash(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            // NB: `0 - (crc & 1)` is all ones when the low bit is set: the polynomial is applied
            // without a branch.
            crc = (crc >> 1) ^ (POLY & 0u32.wrapping_sub(crc & 1));
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::hash;

    #[test]
    fn equals_the_table_driven_crate_on_a_corpus() {
        let mut corpus: Vec<Vec<u8>> = vec![Vec::new(), b"a".to_vec(), b"123456789".to_vec()];
        corpus.extend(
            ["10.0.0.1", "192.168.255.254", "2001:db8::1", "::ffff:10.1.2.3", "shared", "租户"]
                .map(|s| s.as_bytes().to_vec()),
        );
        corpus.extend((0..=255u8).map(|b| vec![b; usize::from(b) + 1]));
        corpus.push((0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect());
        for bytes in &corpus {
            assert_eq!(hash(bytes), crc32fast::hash(bytes), "{bytes:?}");
        }
        assert_eq!(hash(b"123456789"), 0xCBF4_3926, "the standard check value");
    }
}
