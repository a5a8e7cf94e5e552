//! Activation dump files: `.safetensors`, `.npy` and raw element files, parsed defensively into a list
//! of tensors with their byte ranges, for `bitsparse analyze` and for `compress` / `decompress` of
//! whole dump files.
//!
//! Why a module of its own: people bring activations dumped by their own tools, so these parsers see the
//! most hostile input of the crate. Every parser checks every length, offset and shape against the bytes
//! it has before using them, and reports a [`FileError`] naming the tensor concerned; nothing here
//! panics on any input (`tests/fuzz_parsers.rs` holds it to that).
//!
//! A parsed file is a [`ParsedFile`]: the file's header range and its tensors, which together cover the
//! file exactly (no gaps, no overlaps), so [`pack::to_container`] can write a container whose records,
//! concatenated, are the original file byte for byte.
//!
//! Element types (docs/CONVENTIONS.md): BF16, F16, F32, F8_E4M3, F8_E5M2 are activation dtypes
//! ([`Elem::Act`]: analysed and compressed losslessly as they are); every other dtype the file format
//! defines is [`Elem::Other`] (skipped by `analyze`, verbatim in `compress`); a dtype the format does not
//! define is a bad file.

pub mod container;
pub mod npy;
pub mod pack;
pub mod safetensors;
pub mod stats;

use std::ops::Range;

use bitsparse::format::DType;

/// A bad file: what is wrong, and which tensor it concerns (if one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// The tensor concerned, by name, when the problem is in one tensor's entry or data.
    pub tensor: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl FileError {
    /// A problem of the file as a whole (its header, its length).
    pub fn file(message: impl Into<String>) -> FileError {
        FileError { tensor: None, message: message.into() }
    }

    /// A problem of tensor `name`.
    pub fn tensor(name: &str, message: impl Into<String>) -> FileError {
        FileError { tensor: Some(name.to_string()), message: message.into() }
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tensor {
            Some(t) => write!(f, "tensor `{t}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for FileError {}

/// What kind of file the bytes are.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `.safetensors`: 8-byte header length, JSON header, data section.
    Safetensors,
    /// NumPy `.npy`: magic, version, header dict, one array.
    Npy,
    /// Raw little-endian elements of a dtype given on the command line.
    Raw,
}

impl Kind {
    /// Lower-case name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Safetensors => "safetensors",
            Kind::Npy => "npy",
            Kind::Raw => "raw",
        }
    }

    /// The container's record of what the original file was.
    pub fn source(self) -> crate::container::Source {
        match self {
            Kind::Safetensors => crate::container::Source::Safetensors,
            Kind::Npy => crate::container::Source::Npy,
            Kind::Raw => crate::container::Source::Raw,
        }
    }
}

/// How a tensor's elements are treated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elem {
    /// An activation dtype (F32 included): compressed as it is.
    Act(DType),
    /// Any other dtype the file format defines: skipped by `analyze`, verbatim in `compress`. The string
    /// says why it is not an activation (for messages).
    Other(String),
}

/// One tensor of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Its name in the file (for `.npy` and raw files: the name the caller gave, usually the file stem).
    pub name: String,
    /// The dtype as the file spells it (`BF16`, `<f2`, …; for raw files the `--dtype` name).
    pub dtype_name: String,
    /// How its elements are treated.
    pub elem: Elem,
    /// Shape (raw files: one dimension).
    pub shape: Vec<u64>,
    /// Product of the shape.
    pub elements: u64,
    /// Its bytes in the file.
    pub range: Range<usize>,
}

/// A parsed file: header bytes and tensors cover the file exactly, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedFile {
    /// What the file is.
    pub kind: Kind,
    /// The header's bytes (empty for raw files).
    pub header: Range<usize>,
    /// The tensors, sorted by their start in the file (zero-length tensors included).
    pub tensors: Vec<Tensor>,
}

impl ParsedFile {
    /// A raw element file: one tensor of `dtype` named `name`, no header.
    pub fn raw(bytes: &[u8], dtype: DType, name: &str) -> Result<ParsedFile, FileError> {
        let eb = dtype.bytes() as usize;
        if bytes.len() % eb != 0 {
            return Err(FileError::file(format!(
                "{} bytes are not a whole number of {eb}-byte {dtype} elements",
                bytes.len()
            )));
        }
        let n = (bytes.len() / eb) as u64;
        Ok(ParsedFile {
            kind: Kind::Raw,
            header: 0..0,
            tensors: vec![Tensor {
                name: name.to_string(),
                dtype_name: dtype.name().to_string(),
                elem: Elem::Act(dtype),
                shape: vec![n],
                elements: n,
                range: 0..bytes.len(),
            }],
        })
    }

    /// Parses `bytes` as `kind`. `dtype` is the command line's `--dtype`: required for raw files and for
    /// `.npy` void arrays (ml_dtypes' bfloat16 / FP8 are `V2` / `V1`), refused for `.safetensors`, whose
    /// header names every dtype. `name` names the tensor of a `.npy` or raw file.
    pub fn parse(bytes: &[u8], kind: Kind, dtype: Option<DType>, name: &str) -> Result<ParsedFile, FileError> {
        match kind {
            Kind::Safetensors => {
                if let Some(d) = dtype {
                    return Err(FileError::file(format!(
                        "--dtype {d} does not apply to a .safetensors file (its header names each tensor's dtype)"
                    )));
                }
                safetensors::parse(bytes)
            }
            Kind::Npy => npy::parse(bytes, dtype, name),
            Kind::Raw => match dtype {
                Some(d) => ParsedFile::raw(bytes, d, name),
                None => Err(FileError::file("a raw element file needs --dtype")),
            },
        }
    }

    /// Checks the invariant the container relies on: header then tensors cover `0..len` with neither
    /// gaps nor overlaps (zero-length tensors may sit anywhere inside). The parsers guarantee it; this is
    /// the last line of defence before bytes are trusted to be byte-exact.
    pub fn check_coverage(&self, len: usize) -> Result<(), FileError> {
        let mut pos = self.header.end;
        if self.header.start != 0 {
            return Err(FileError::file("internal: header does not start the file"));
        }
        for t in &self.tensors {
            if t.range.start > t.range.end || t.range.end > len {
                return Err(FileError::tensor(&t.name, "internal: byte range outside the file"));
            }
            if t.range.is_empty() {
                continue;
            }
            if t.range.start != pos {
                return Err(FileError::tensor(&t.name, "internal: tensors do not tile the file"));
            }
            pos = t.range.end;
        }
        if pos != len {
            return Err(FileError::file("internal: tensors do not reach the end of the file"));
        }
        Ok(())
    }
}

/// The npy magic (`\x93NUMPY`).
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Decides what kind of file `path` is from its name, its first bytes `head` (16 are enough) and its
/// length `file_len`. The CLI passes bytes it has already read: an input is read once (a pipe cannot be
/// read twice).
///
/// By extension first (`.safetensors`, `.npy`). Otherwise, when `--dtype` was given, raw: the user said
/// the file is raw elements, and raw bytes can look like anything — a BF16 tensor can start with the
/// npy magic `93 4E 55 4D 50 59`. Without `--dtype`, by content: the npy magic means `.npy`; a plausible
/// safetensors header (a little-endian length that fits the file, followed by `{`) means `.safetensors`;
/// everything else is raw (and then needs `--dtype`).
pub fn detect(path: &std::path::Path, head: &[u8], file_len: u64, dtype_given: bool) -> Kind {
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("safetensors") => return Kind::Safetensors,
        Some("npy") => return Kind::Npy,
        _ => {}
    }
    if dtype_given {
        return Kind::Raw;
    }
    if head.starts_with(NPY_MAGIC) {
        return Kind::Npy;
    }
    if looks_like_safetensors(head, file_len) {
        return Kind::Safetensors;
    }
    Kind::Raw
}

/// A plausible safetensors start (`head`: the first bytes of a file of `file_len` bytes): the header
/// length fits the file and the header opens a JSON object.
pub fn looks_like_safetensors(head: &[u8], file_len: u64) -> bool {
    if head.len() < 9 {
        return false;
    }
    let n = u64::from_le_bytes(head[..8].try_into().unwrap_or([0xff; 8]));
    n >= 2 && n <= file_len.saturating_sub(8) && head[8] == b'{'
}

/// Converts little-endian f32 elements to BF16 (round to nearest even). NaN stays NaN with its sign
/// (quieted). A trailing partial element is ignored. (`analyze` no longer uses it: F32 is an activation
/// dtype of its own.)
pub fn f32_to_bf16_bytes(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2);
    for c in data.chunks_exact(4) {
        let b = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let h = if f32::from_bits(b).is_nan() {
            ((b >> 16) | 0x0040) as u16
        } else {
            // Round to nearest even on the 16 bits dropped; overflow rounds to infinity as it should.
            ((b as u64 + 0x7fff + ((b as u64 >> 16) & 1)) >> 16) as u16
        };
        out.extend_from_slice(&h.to_le_bytes());
    }
    out
}

/// `[2, 3]` style, for messages and tables.
pub fn shape_string(shape: &[u64]) -> String {
    format!("[{}]", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

/// Product of `shape` with overflow check.
pub(crate) fn elements_of(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_to_bf16_rounds_to_nearest_even_and_keeps_nan_sign() {
        let conv = |f: u32| u16::from_le_bytes(f32_to_bf16_bytes(&f.to_le_bytes())[..2].try_into().unwrap());
        assert_eq!(conv(0x3f80_0000), 0x3f80); // 1.0
        assert_eq!(conv(0x3f80_8000), 0x3f80); // tie, even stays
        assert_eq!(conv(0x3f81_8000), 0x3f82); // tie, odd rounds up
        assert_eq!(conv(0x3f80_8001), 0x3f81); // above the tie
        assert_eq!(conv(0x7f7f_ffff), 0x7f80); // max f32 rounds to +inf
        assert_eq!(conv(0x0000_0001), 0x0000); // tiny subnormal rounds to zero
        assert_eq!(conv(0xffc0_0001), 0xffc0); // negative NaN stays negative NaN
        assert_eq!(conv(0x7f80_0001), 0x7fc0); // signalling NaN is quieted, not turned into inf
        assert_eq!(conv(0x8000_0000), 0x8000); // -0.0
    }

    #[test]
    fn detect_by_extension_then_content() {
        use std::path::Path;
        let st = {
            let mut v = 2u64.to_le_bytes().to_vec();
            v.extend_from_slice(b"{}");
            v
        };
        let len = st.len() as u64;
        assert_eq!(detect(Path::new("a.SafeTensors"), b"", 0, false), Kind::Safetensors);
        assert_eq!(detect(Path::new("a.npy"), b"", 0, true), Kind::Npy);
        assert_eq!(detect(Path::new("a.bin"), b"\x93NUMPY\x01\x00", 100, false), Kind::Npy);
        // --dtype wins over content: raw elements may start with the npy magic.
        assert_eq!(detect(Path::new("a.bin"), b"\x93NUMPY\x01\x00", 100, true), Kind::Raw);
        assert_eq!(detect(Path::new("-"), b"\x93NUMPY\x01\x00", 100, true), Kind::Raw);
        assert_eq!(detect(Path::new("a.bin"), &st, len, false), Kind::Safetensors);
        assert_eq!(detect(Path::new("a.bin"), &st, len - 1, false), Kind::Raw);
        assert_eq!(detect(Path::new("a.bin"), &st, len, true), Kind::Raw);
        assert_eq!(detect(Path::new("a.bin"), &[0u8; 100], 100, false), Kind::Raw);
    }
}
