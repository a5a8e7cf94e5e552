//! Properties and fixed vectors of the CPU reference codec (`bitsparse::cpu`), the spec in code.
//!
//! Besides round trips, the compressed bytes are compared against `naive_encode`, a deliberately
//! simple bit-by-bit encoder written from `docs/FORMAT.md` alone, and against hand-computed golden bytes
//! that also appear in that document.

use bitsparse::conformance::{DENSITIES, LENGTHS};
use bitsparse::cpu;
use bitsparse::format::{hdr, DType, Layout, Options, MAGIC, TILE};
use bitsparse::Error;
use proptest::prelude::*;

// ---------- helpers ----------

fn words_to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_to_words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn elements(data: &[u8], dtype: DType) -> Vec<u32> {
    match dtype.bytes() {
        4 => bytes_to_words(data),
        2 => data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as u32).collect(),
        _ => data.iter().map(|&b| b as u32).collect(),
    }
}

fn from_elements(el: &[u32], dtype: DType) -> Vec<u8> {
    match dtype.bytes() {
        4 => words_to_bytes(el),
        2 => el.iter().flat_map(|&e| (e as u16).to_le_bytes()).collect(),
        _ => el.iter().map(|&e| e as u8).collect(),
    }
}

/// A bit-by-bit encoder straight from the spec, sharing no code with `cpu::compress`.
fn naive_encode(data: &[u8], dtype: DType, sign_pack: bool) -> Vec<u8> {
    let el = elements(data, dtype);
    let n = el.len();
    let w = dtype.bits() - sign_pack as u32;
    let tiles = n.div_ceil(4096);
    let mut mask = vec![0u32; n.div_ceil(32)];
    for (i, &e) in el.iter().enumerate() {
        if e != 0 {
            mask[i / 32] |= 1 << (i % 32);
        }
    }
    let mut table = Vec::new();
    let mut values: Vec<u32> = Vec::new();
    for t in 0..tiles {
        table.push(values.len() as u32);
        let mut bits: Vec<bool> = Vec::new();
        for &e in &el[t * 4096..n.min(t * 4096 + 4096)] {
            if e != 0 {
                for j in 0..w {
                    bits.push(e >> j & 1 == 1);
                }
            }
        }
        for chunk in bits.chunks(32) {
            values.push(chunk.iter().enumerate().map(|(j, &b)| (b as u32) << j).sum());
        }
    }
    let info = 1 | (dtype.code() as u32) << 8 | (sign_pack as u32) << 16 | 12 << 24;
    let mut out = vec![MAGIC, info, n as u32, (n as u64 >> 32) as u32, values.len() as u32, 0, 0, 0];
    out.extend(table);
    out.extend(mask);
    out.extend(values);
    words_to_bytes(&out)
}

/// Clears the sign bit of every element, so the data can be sign-packed.
fn clear_signs(data: &mut [u8], dtype: DType) {
    match dtype.bytes() {
        4 => data.iter_mut().skip(3).step_by(4).for_each(|b| *b &= 0x7F),
        2 => data.iter_mut().skip(1).step_by(2).for_each(|b| *b &= 0x7F),
        _ => data.iter_mut().for_each(|b| *b &= 0x7F),
    }
}

/// Tile streams' (offset, words) of a valid stream, read through the public layout.
fn spans(stream: &[u8]) -> (Layout, Vec<(u64, u64)>) {
    let (l, _) = cpu::validate(stream).unwrap();
    let w = bytes_to_words(stream);
    let spans = (0..l.tiles)
        .map(|t| {
            let m0 = (l.mask_offset + t * 128) as usize;
            let m1 = (l.mask_offset + l.mask_words).min(l.mask_offset + (t + 1) * 128) as usize;
            let count: u64 = w[m0..m1].iter().map(|x| x.count_ones() as u64).sum();
            (w[(l.table_offset + t) as usize] as u64, bitsparse::format::stream_words(count, l.value_width()))
        })
        .collect();
    (l, spans)
}

/// Re-places the tile streams of a valid stream in the order `order`, with up to `gaps[i]` junk words
/// before each one (the junk must be ignored), within the worst-case capacity: an out-of-order, gapped
/// placement a GPU variant could write.
fn scatter(stream: &[u8], order: &[usize], gaps: &[u64]) -> Vec<u8> {
    let (l, sp) = spans(stream);
    let src = bytes_to_words(stream);
    let mut out: Vec<u32> = src[..l.values_offset as usize].to_vec();
    let mut values: Vec<u32> = Vec::new();
    let mut end = 0u64;
    let mut slack = l.values_capacity - sp.iter().map(|s| s.1).sum::<u64>();
    for (i, &t) in order.iter().enumerate() {
        let gap = gaps[i].min(slack);
        slack -= gap;
        values.extend(std::iter::repeat_n(0xDEAD_BEEF, gap as usize));
        let (off, words) = sp[t];
        out[(l.table_offset + t as u64) as usize] = values.len() as u32;
        let s = (l.values_offset + off) as usize;
        values.extend_from_slice(&src[s..s + words as usize]);
        end = end.max(values.len() as u64);
    }
    out[hdr::VALUE_WORDS] = end as u32;
    out.extend(values);
    words_to_bytes(&out)
}

fn dtype_strategy() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

/// The conformance suite's densities, or any.
fn density_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![prop::sample::select(DENSITIES.to_vec()), 0.0..=1.0f64]
}

/// The conformance suite's lengths and two tiles + 1, or any up to a little over three tiles.
fn len_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![prop::sample::select(LENGTHS.iter().copied().chain([8193]).collect::<Vec<_>>()), 0..13_000usize]
}

/// Random raw data (special patterns included) and whether it is to be sign-packed (then signs cleared).
fn case() -> impl Strategy<Value = (Vec<u8>, DType, bool)> {
    (dtype_strategy(), any::<bool>(), len_strategy(), density_strategy(), any::<u64>()).prop_map(
        |(dtype, sp, n, d, seed)| {
            let mut data = cpu::synthetic_bits(n, d, dtype, seed);
            if sp {
                clear_signs(&mut data, dtype);
            }
            (data, dtype, sp)
        },
    )
}

fn opts(sign_pack: bool) -> Options {
    Options { sign_pack }
}

// ---------- properties ----------

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn round_trip_is_bit_exact_and_matches_the_naive_encoder((data, dtype, sp) in case()) {
        let c = cpu::compress(&data, dtype, opts(sp)).unwrap();
        prop_assert_eq!(&c, &naive_encode(&data, dtype, sp));
        let (layout, header) = cpu::validate(&c).unwrap();
        prop_assert_eq!(layout.n, (data.len() as u64) / dtype.bytes());
        prop_assert_eq!(c.len() as u64, layout.compact_bytes(header.value_words as u64));
        prop_assert_eq!(cpu::decompress(&c).unwrap(), data);
    }

    #[test]
    fn sign_pack_reports_the_first_signed_element(dtype in dtype_strategy(), n in 1..9000usize, d in 0.001..1.0f64, seed: u64) {
        let data = cpu::synthetic_bits(n, d, dtype, seed);
        let sign = dtype.sign_bit();
        let first = elements(&data, dtype).iter().position(|&e| e & sign != 0);
        match (cpu::compress(&data, dtype, Options::SIGN_PACK), first) {
            (Err(Error::SignBitSet { index }), Some(i)) => prop_assert_eq!(index, Some(i as u64)),
            (Ok(c), None) => prop_assert_eq!(cpu::decompress(&c).unwrap(), data),
            (r, f) => prop_assert!(false, "unexpected {:?} with first signed element {:?}", r.map(|_| ()), f),
        }
    }

    #[test]
    fn gapped_and_out_of_order_placements_decode_and_compact_to_canonical(
        (data, dtype, sp) in case(), chunk_tiles in 1..4u64, seed: u64,
    ) {
        let canon = cpu::compress(&data, dtype, opts(sp)).unwrap();
        let chunked = cpu::place_chunked(&canon, chunk_tiles).unwrap();
        prop_assert_eq!(&cpu::decompress(&chunked).unwrap(), &data);
        prop_assert_eq!(&cpu::compact(&chunked).unwrap(), &canon);

        let tiles = cpu::validate(&canon).unwrap().0.tiles as usize;
        let mut order: Vec<usize> = (0..tiles).collect();
        let mut s = seed;
        for i in (1..tiles).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (s >> 33) as usize % (i + 1));
        }
        let gaps: Vec<u64> = (0..tiles).map(|i| (seed >> (i % 60)) & 3).collect();
        let scattered = scatter(&canon, &order, &gaps);
        prop_assert_eq!(&cpu::decompress(&scattered).unwrap(), &data);
        prop_assert_eq!(&cpu::compact(&scattered).unwrap(), &canon);
    }

    #[test]
    fn decompress_range_equals_the_slice((data, dtype, sp) in case(), a in 0.0..1.0f64, b in 0.0..1.0f64) {
        let c = cpu::compress(&data, dtype, opts(sp)).unwrap();
        let n = data.len() as u64 / dtype.bytes();
        let start = (a * n as f64) as u64;
        let len = (b * (n - start) as f64) as u64;
        let eb = dtype.bytes() as usize;
        let got = cpu::decompress_range(&c, start, len).unwrap();
        prop_assert_eq!(&got[..], &data[start as usize * eb..(start + len) as usize * eb]);
        prop_assert!(cpu::decompress_range(&c, start, n - start + 1).is_err());
    }

    #[test]
    fn header_corruption_is_caught_or_harmless((data, dtype, sp) in case(), byte in 0..32usize, xor in 1..=255u8) {
        let c = cpu::compress(&data, dtype, opts(sp)).unwrap();
        let mut bad = c.clone();
        bad[byte] ^= xor;
        let r = cpu::decompress(&bad);
        match byte / 4 {
            // AMAX / SCALE are metadata: the data must come back unchanged.
            hdr::AMAX | hdr::SCALE => prop_assert_eq!(r.unwrap(), data),
            // Without a checksum (the container has one), a changed element count or a dtype / flags
            // byte that keeps every stream size can decode; it then obeys the damaged header.
            hdr::N_LO | hdr::N_HI | hdr::INFO if !(byte == 4 || byte == 7) => {
                if let Ok(out) = r {
                    let (l, _) = cpu::validate(&bad).unwrap();
                    prop_assert_eq!(out.len() as u64, l.dense_bytes());
                }
            }
            // Magic, version, tile size, VALUE_WORDS, STATUS: always detected.
            _ => prop_assert!(r.is_err(), "header byte {} ^ {:#x} not detected", byte, xor),
        }
    }

    #[test]
    fn truncation_is_always_an_error((data, dtype, sp) in case(), cut in 0.0..1.0f64) {
        let c = cpu::compress(&data, dtype, opts(sp)).unwrap();
        let keep = (cut * c.len() as f64) as usize; // < c.len()
        prop_assert!(cpu::decompress(&c[..keep]).is_err());
        prop_assert!(cpu::validate(&c[..keep]).is_err());
        prop_assert!(cpu::compact(&c[..keep]).is_err());
    }

    #[test]
    fn any_corruption_never_panics((data, dtype, sp) in case(), hits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let mut bad = cpu::compress(&data, dtype, opts(sp)).unwrap();
        for (at, v) in hits {
            let i = at % bad.len();
            bad[i] = v;
        }
        if let Ok(out) = cpu::decompress(&bad) {
            let (l, _) = cpu::validate(&bad).unwrap();
            prop_assert_eq!(out.len() as u64, l.dense_bytes());
            let _ = cpu::compact(&bad).unwrap();
            let _ = cpu::decompress_range(&bad, 0, l.n).unwrap();
        }
    }
}

// ---------- golden bytes (the worked examples of docs/FORMAT.md) ----------

/// docs/FORMAT.md, example 1: seven BF16 elements, no sign packing.
#[test]
fn golden_bf16() {
    let data = from_elements(&[0x3F80, 0x0000, 0x8000, 0x0000, 0x0000, 0x7FC1, 0x0001], DType::Bf16);
    let expected = [
        0x5450_5342,
        0x0C00_0001,
        7,
        0,
        2,
        0,
        0,
        0,           // header
        0x0000_0000, // table
        0x0000_0065, // mask: elements 0, 2, 5, 6
        0x8000_3F80,
        0x0001_7FC1, // values
    ];
    let c = cpu::compress(&data, DType::Bf16, Options::default()).unwrap();
    assert_eq!(bytes_to_words(&c), expected);
    assert_eq!(&c[..4], b"BSPT");
    assert_eq!(&c[40..48], [0x80, 0x3F, 0x00, 0x80, 0xC1, 0x7F, 0x01, 0x00]);
    assert_eq!(cpu::decompress(&c).unwrap(), data);
}

/// docs/FORMAT.md, example 2: four BF16 elements, sign-packed into a 15-bit stream.
#[test]
fn golden_bf16_sign_packed_15_bit() {
    let data = from_elements(&[0x3F80, 0x4000, 0x0000, 0x7FC1], DType::Bf16);
    let expected = [0x5450_5342, 0x0C01_0001, 4, 0, 2, 0, 0, 0, 0, 0x0000_000B, 0x6000_3F80, 0x0000_1FF0];
    let c = cpu::compress(&data, DType::Bf16, Options::SIGN_PACK).unwrap();
    assert_eq!(bytes_to_words(&c), expected);
    assert_eq!(cpu::decompress(&c).unwrap(), data);
}

/// docs/FORMAT.md, example 3: seven FP8 e4m3 elements, sign-packed into a 7-bit stream.
#[test]
fn golden_e4m3_sign_packed_7_bit() {
    let data = vec![0x38u8, 0x00, 0x7F, 0x01, 0x00, 0x40, 0x7E];
    let expected = [0x5450_5342, 0x0C01_0201, 7, 0, 2, 0, 0, 0, 0, 0x0000_006D, 0xE800_7FB8, 0x0000_0007];
    let c = cpu::compress(&data, DType::E4m3, Options::SIGN_PACK).unwrap();
    assert_eq!(bytes_to_words(&c), expected);
    assert_eq!(cpu::decompress(&c).unwrap(), data);
}

/// docs/FORMAT.md, example 5: five F32 elements, sign-packed into a 31-bit stream; unpacked, the values
/// are the nonzero words themselves.
#[test]
fn golden_f32_sign_packed_31_bit() {
    let el = [0x3F80_0000u32, 0, 0x7FC0_0001, 0x0000_0001, 0x7F80_0000];
    let data = words_to_bytes(&el);
    let expected = [
        0x5450_5342,
        0x0C01_0401,
        5,
        0,
        4,
        0,
        0,
        0,
        0,
        0x0000_001D,
        0xBF80_0000,
        0x7FE0_0000,
        0x0000_0000,
        0x0FF0_0000,
    ];
    let c = cpu::compress(&data, DType::F32, Options::SIGN_PACK).unwrap();
    assert_eq!(bytes_to_words(&c), expected);
    assert_eq!(cpu::decompress(&c).unwrap(), data);
    let c = cpu::compress(&data, DType::F32, Options::default()).unwrap();
    let expected = [0x5450_5342, 0x0C00_0401, 5, 0, 4, 0, 0, 0, 0, 0x1D, 0x3F80_0000, 0x7FC0_0001, 1, 0x7F80_0000];
    assert_eq!(bytes_to_words(&c), expected);
    // −0.0 is refused under sign packing, at its index.
    let neg = words_to_bytes(&[0x3F80_0000, 0x8000_0000]);
    assert!(matches!(cpu::compress(&neg, DType::F32, Options::SIGN_PACK), Err(Error::SignBitSet { index: Some(1) })));
}

/// docs/FORMAT.md, example 4: two tiles; the table holds each tile's start in the values section.
#[test]
fn golden_two_tiles_table() {
    // Tile 0: 4096 elements of 1.0 (2048 value words). Tile 1: one element, 2.0.
    let mut el = vec![0x3F80u32; 4096];
    el.push(0x4000);
    let c = cpu::compress(&from_elements(&el, DType::Bf16), DType::Bf16, Options::default()).unwrap();
    let w = bytes_to_words(&c);
    assert_eq!(w[hdr::VALUE_WORDS], 2049);
    assert_eq!(&w[8..10], [0, 2048]); // table
    assert!(w[10..138].iter().all(|&m| m == u32::MAX)); // tile 0's mask words
    assert_eq!(w[138], 1); // mask word 128: element 4096
    assert_eq!(w[139 + 2047], 0x3F80_3F80);
    assert_eq!(w[139 + 2048], 0x0000_4000);
    assert_eq!(w.len(), 139 + 2049);
}

// ---------- fixed sweeps ----------

#[test]
fn edge_lengths_and_densities_all_dtypes_and_sign_modes() {
    for dtype in DType::ALL {
        for n in LENGTHS {
            for density in DENSITIES {
                let data = cpu::synthetic_relu2(n, density, dtype, n as u64 ^ density.to_bits());
                for sp in [false, true] {
                    let c = cpu::compress(&data, dtype, opts(sp)).unwrap();
                    assert_eq!(c, naive_encode(&data, dtype, sp), "{dtype} n={n} d={density} sp={sp}");
                    assert_eq!(cpu::decompress(&c).unwrap(), data, "{dtype} n={n} d={density} sp={sp}");
                }
                let raw = cpu::synthetic_bits(n, density, dtype, 11);
                let c = cpu::compress(&raw, dtype, Options::default()).unwrap();
                assert_eq!(cpu::decompress(&c).unwrap(), raw, "{dtype} n={n} d={density} raw");
            }
        }
    }
}

#[test]
fn special_patterns_round_trip() {
    let p16 = [
        0x8000u32, 0xFFFF, 0x7FFF, 0x7FC1, 0xFFC1, 0x7F80, 0xFF80, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x8001, 0x03FF,
        0x007F,
    ];
    let p8 = [0x80u32, 0xFF, 0x7F, 0x01, 0x81, 0x7E, 0x7C, 0xFC, 0x7D];
    // F32: −0.0 first (the sign refusal below needs a sign bit at element 0), then the specials.
    let p32: Vec<u32> = std::iter::once(0x8000_0000).chain(cpu::SPECIAL32).collect();
    for dtype in DType::ALL {
        let pats: &[u32] = match dtype.bytes() {
            4 => &p32,
            2 => &p16,
            _ => &p8,
        };
        let el: Vec<u32> = (0..5000).map(|i| if i % 3 == 0 { pats[i / 3 % pats.len()] } else { 0 }).collect();
        let data = from_elements(&el, dtype);
        let c = cpu::compress(&data, dtype, Options::default()).unwrap();
        assert_eq!(cpu::decompress(&c).unwrap(), data, "{dtype}");
        assert_eq!(cpu::count_nonzeros(&data, dtype), el.iter().filter(|&&e| e != 0).count() as u64);
        // -0.0 (or any sign bit) is refused under sign packing, at its index.
        assert!(matches!(cpu::compress(&data, dtype, Options::SIGN_PACK), Err(Error::SignBitSet { index: Some(0) })));
    }
}

#[test]
fn several_megabytes_round_trip() {
    // 4M BF16 elements (8 MB) at the quickstart's density: the reference must handle real sizes.
    let data = cpu::synthetic_relu2(4 << 20, 0.176, DType::Bf16, 42);
    let c = cpu::compress(&data, DType::Bf16, Options::SIGN_PACK).unwrap();
    assert!(c.len() < data.len() / 3, "ratio too small: {} -> {}", data.len(), c.len());
    assert_eq!(cpu::decompress(&c).unwrap(), data);
    let mid = cpu::decompress_range(&c, 1_000_000, 70_000).unwrap();
    assert_eq!(mid, data[2_000_000..2_140_000]);
}

// ---------- every validation rule ----------

/// A canonical two-tile BF16 stream with both tiles nonempty, as words.
fn two_tile_words() -> (Vec<u8>, Vec<u32>) {
    let data = cpu::synthetic_bits(4096 + 100, 0.3, DType::Bf16, 5);
    let w = bytes_to_words(&cpu::compress(&data, DType::Bf16, Options::default()).unwrap());
    (data, w)
}

fn corrupt_msg(r: Result<Vec<u8>, Error>) -> String {
    match r {
        Err(Error::Corrupt(m)) => m,
        other => panic!("expected Corrupt, got {:?}", other.map(|v| v.len())),
    }
}

#[test]
fn header_field_errors() {
    let (_, w) = two_tile_words();
    let with = |i: usize, v: u32| {
        let mut x = w.clone();
        x[i] = v;
        cpu::decompress(&words_to_bytes(&x))
    };
    assert!(corrupt_msg(with(hdr::MAGIC, 0)).contains("magic"));
    assert!(corrupt_msg(with(hdr::INFO, w[1] & !0xFF | 3)).contains("version"));
    // Version 2's sections differ: version-1 bytes under a version-2 header are refused.
    assert!(matches!(with(hdr::INFO, w[1] & !0xFF | 2), Err(Error::Corrupt(_))));
    assert!(corrupt_msg(with(hdr::INFO, w[1] | 9 << 8)).contains("dtype"));
    assert!(corrupt_msg(with(hdr::INFO, w[1] | 2 << 16)).contains("flags"));
    assert!(corrupt_msg(with(hdr::INFO, w[1] & 0x00FF_FFFF | 11 << 24)).contains("tile"));
    assert!(with(hdr::VALUE_WORDS, w[4] - 1).is_err());
    assert!(with(hdr::VALUE_WORDS, w[4] + 1).is_err());
    assert!(matches!(with(hdr::STATUS, 1), Err(Error::SignBitSet { index: None })));
    assert!(corrupt_msg(with(hdr::STATUS, 2)).contains("overflow"));
    assert!(corrupt_msg(with(hdr::STATUS, 4)).contains("skipped"));
    assert!(corrupt_msg(with(hdr::STATUS, 8)).contains("status"));
}

#[test]
fn huge_claimed_length_fails_fast_without_allocating() {
    let mut h = Layout::new(DType::Bf16, 100, Options::default()).unwrap().header(0, 0, 0, 0);
    for n in [1u64 << 40, 1 << 36, u64::MAX, 1 << 32] {
        h[hdr::N_LO] = n as u32;
        h[hdr::N_HI] = (n >> 32) as u32;
        let mut b = words_to_bytes(&h);
        b.resize(100, 0);
        let t = std::time::Instant::now();
        assert!(matches!(cpu::decompress(&b), Err(Error::Corrupt(_))), "n = {n}");
        assert!(cpu::decompress_range(&b, 0, 1).is_err());
        assert!(t.elapsed().as_millis() < 500);
    }
    assert!(cpu::decompress(&[0u8; 31]).is_err());
    assert!(cpu::decompress(&[]).is_err());
}

#[test]
fn mask_bits_past_n_are_an_error() {
    let data = from_elements(&[1, 0, 3], DType::F16);
    let mut w = bytes_to_words(&cpu::compress(&data, DType::F16, Options::default()).unwrap());
    w[9] |= 1 << 3; // element 3 does not exist
    assert!(corrupt_msg(cpu::decompress(&words_to_bytes(&w))).contains("past the last element"));
}

#[test]
fn out_of_range_and_overlapping_tables_are_errors() {
    let (data, w) = two_tile_words();
    let l = Layout::new(DType::Bf16, 4196, Options::default()).unwrap();
    let t1 = l.table_offset as usize + 1;
    // Tile 1 pushed past the end of the values section.
    let mut x = w.clone();
    x[t1] += 1;
    assert!(corrupt_msg(cpu::decompress(&words_to_bytes(&x))).contains("outside"));
    let mut x = w.clone();
    x[t1] = u32::MAX;
    assert!(cpu::decompress(&words_to_bytes(&x)).is_err());

    // Tile 1 moved to the front, overlapping tile 0 which moves up by one word: every stream inside
    // VALUE_WORDS, and VALUE_WORDS still the furthest end, so only the overlap check can catch it.
    let (_, sp) = spans(&words_to_bytes(&w));
    let (w0, w1) = (sp[0].1, sp[1].1);
    assert!(w1 > 1);
    let mut x = w[..l.values_offset as usize].to_vec();
    x[t1 - 1] = 1;
    x[t1] = 0;
    x[hdr::VALUE_WORDS] = (1 + w0).max(w1) as u32;
    x.extend(std::iter::repeat_n(0u32, x[hdr::VALUE_WORDS] as usize));
    assert!(corrupt_msg(cpu::decompress(&words_to_bytes(&x))).contains("overlap"));

    // The same move without overlap (tile 0 after tile 1) is valid and decodes correctly.
    let v = l.values_offset as usize;
    let mut x = w[..v].to_vec();
    x[t1 - 1] = w1 as u32;
    x[t1] = 0;
    x[hdr::VALUE_WORDS] = (w0 + w1) as u32;
    x.extend_from_slice(&w[v + w0 as usize..v + (w0 + w1) as usize]);
    x.extend_from_slice(&w[v..v + w0 as usize]);
    assert_eq!(cpu::decompress(&words_to_bytes(&x)).unwrap(), data);
    assert_eq!(bytes_to_words(&cpu::compact(&words_to_bytes(&x)).unwrap()), w);
}

#[test]
fn trailing_bytes_are_ignored_and_ranges_are_checked() {
    let (data, w) = two_tile_words();
    let mut b = words_to_bytes(&w);
    b.extend_from_slice(&[0xAB; 13]);
    assert_eq!(cpu::decompress(&b).unwrap(), data);
    assert!(matches!(cpu::decompress_range(&b, 4196, 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(cpu::decompress_range(&b, u64::MAX, 2), Err(Error::InvalidArgument(_))));
    assert_eq!(cpu::decompress_range(&b, 4196, 0).unwrap(), Vec::<u8>::new());
    assert!(matches!(cpu::place_chunked(&b, 0), Err(Error::InvalidArgument(_))));
}

#[test]
fn chunked_placement_matches_the_gpu_rule() {
    // Chunks of one tile: tile t's stream starts at value word t * stream_words(4096, width).
    let data = cpu::synthetic_relu2(3 * TILE as usize + 5, 0.2, DType::E5m2, 3);
    let canon = cpu::compress(&data, DType::E5m2, Options::SIGN_PACK).unwrap();
    let chunked = cpu::place_chunked(&canon, 1).unwrap();
    let (l, sp) = spans(&chunked);
    for (t, &(off, _)) in sp.iter().enumerate() {
        assert_eq!(off, l.chunk_value_base(t as u64));
        assert_eq!(off, t as u64 * 4096 * 7 / 32);
    }
    let w = bytes_to_words(&chunked);
    assert_eq!(w[hdr::VALUE_WORDS] as u64, sp[3].0 + sp[3].1);
    assert_eq!(cpu::decompress(&chunked).unwrap(), data);
}

#[test]
fn partial_elements_and_too_large_are_typed_errors() {
    assert!(matches!(
        cpu::compress(&[0u8; 5], DType::Bf16, Options::default()),
        Err(Error::PartialElement { bytes: 5, elem_bytes: 2 })
    ));
    assert!(cpu::compress(&[0u8; 4], DType::E4m3, Options::SIGN_PACK).is_ok());
}

/// docs/FORMAT.md, example 4's variant: a sparse first tile leaves a gap in the chunked placement.
#[test]
fn golden_chunked_gap() {
    let mut el = vec![0u32; 4097];
    for e in el.iter_mut().take(100) {
        *e = 0x3F80;
    }
    el[4096] = 0x4000;
    let canon = cpu::compress(&from_elements(&el, DType::Bf16), DType::Bf16, Options::default()).unwrap();
    let w = bytes_to_words(&canon);
    assert_eq!((&w[8..10], w[hdr::VALUE_WORDS]), (&[0, 50][..], 51));
    let chunked = bytes_to_words(&cpu::place_chunked(&canon, 1).unwrap());
    assert_eq!((&chunked[8..10], chunked[hdr::VALUE_WORDS]), (&[0, 2048][..], 2049));
    assert_eq!(chunked.len(), 139 + 2049);
    assert_eq!(chunked[139 + 2048], 0x4000);
    assert_eq!(cpu::compact(&words_to_bytes(&chunked)).unwrap(), canon);
}
