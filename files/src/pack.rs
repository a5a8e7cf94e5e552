//! A parsed dump file to a container and back: the header and every non-activation tensor as verbatim
//! records, every activation tensor as a tensor record carrying its name, so that the records decoded
//! and concatenated give the original file byte for byte.

use super::{stats, Elem, FileError, ParsedFile};
use crate::container::{Container, Record};
use bitsparse::error::{Error, Result};
use bitsparse::format::{DType, Options};

/// What [`to_container`] did with each tensor, for the command's report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackReport {
    /// Tensors stored as compressed tensor records.
    pub compressed: Vec<String>,
    /// Tensors stored verbatim (non-activation dtypes).
    pub verbatim: Vec<String>,
    /// Tensors that `--sign-pack` could not pack (a value has its sign bit set) and that were therefore
    /// compressed without sign packing: `(name, elements with the sign bit set)`.
    pub not_sign_packed: Vec<(String, u64)>,
}

/// Builds the container of `bytes`, parsed as `parsed`. `compress` makes one tensor stream (the GPU in
/// the CLI, the CPU reference in tests). Under `options.sign_pack`, a tensor with a sign bit set is
/// compressed without sign packing and listed in [`PackReport::not_sign_packed`] (for a raw file, whose
/// one tensor is the whole point, the caller treats that as an error instead: see [`crate::files`]).
/// Errors name the tensor.
pub fn to_container(
    parsed: &ParsedFile,
    bytes: &[u8],
    options: Options,
    mut compress: impl FnMut(&[u8], DType, Options) -> Result<Vec<u8>>,
) -> std::result::Result<(Container, PackReport), (FileError, Option<Error>)> {
    parsed.check_coverage(bytes.len()).map_err(|e| (e, None))?;
    let mut records = Vec::with_capacity(parsed.tensors.len() + 1);
    let mut report = PackReport::default();
    if !parsed.header.is_empty() {
        records.push(Record::verbatim(&bytes[parsed.header.clone()], None));
    }
    for t in &parsed.tensors {
        let data = &bytes[t.range.clone()];
        match &t.elem {
            Elem::Act(dtype) => {
                let mut opts = options;
                if options.sign_pack {
                    let negatives = stats::stats(data, *dtype).negatives;
                    if negatives > 0 {
                        opts.sign_pack = false;
                        report.not_sign_packed.push((t.name.clone(), negatives));
                    }
                }
                let r = Record::tensor(data, *dtype, opts, Some(t.name.clone()), &mut compress)
                    .map_err(|e| (FileError::tensor(&t.name, e.to_string()), Some(e)))?;
                records.push(r);
                report.compressed.push(t.name.clone());
            }
            Elem::Other(_) => {
                records.push(Record::verbatim(data, Some(t.name.clone())));
                report.verbatim.push(t.name.clone());
            }
        }
    }
    let c = Container { source: parsed.kind.source(), records };
    // The invariant the whole scheme rests on, checked rather than assumed.
    if c.original_len() != bytes.len() as u64 {
        return Err((FileError::file("internal: records do not add up to the file"), None));
    }
    Ok((c, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{safetensors, Kind};

    #[test]
    fn safetensors_round_trip_through_the_cpu_codec() {
        let relu = bitsparse::cpu::synthetic_relu2(5000, 0.2, DType::Bf16, 1);
        let mut neg = bitsparse::cpu::synthetic_relu2(300, 0.5, DType::E4m3, 2);
        neg[7] = 0x80;
        let f32s: Vec<u8> = (0..10u32).flat_map(|i| (i as f32 - 3.0).to_le_bytes()).collect();
        let ids = [1u8, 0, 0, 0, 0, 0, 0, 0];
        let b = safetensors::write(
            &[
                ("r", "BF16", &[50, 100], &relu),
                ("n", "F8_E4M3", &[300], &neg),
                ("f", "F32", &[10], &f32s),
                ("i", "I64", &[1], &ids),
                ("e", "F16", &[0], &[]),
            ],
            None,
        );
        let p = ParsedFile::parse(&b, Kind::Safetensors, None, "").unwrap();
        let (c, rep) = to_container(&p, &b, Options::SIGN_PACK, bitsparse::cpu::compress).unwrap();
        assert_eq!(rep.compressed, ["r", "n", "f", "e"]);
        assert_eq!(rep.not_sign_packed, vec![("n".to_string(), 1), ("f".to_string(), 3)]);
        assert_eq!(rep.verbatim.len(), 1);
        let bytes = c.to_bytes();
        let back = Container::parse(&bytes).unwrap().decode(bitsparse::cpu::decompress).unwrap();
        assert!(back == b);
    }
}
