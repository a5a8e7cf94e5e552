//! The self-describing file container that `bitsparse compress` writes and `bitsparse decompress` reads.
//!
//! A container is a header followed by a list of records. Each record decodes to a run of bytes of the
//! original file, and the runs concatenated in record order give back the original file byte-exactly. That
//! single rule is what lets one format carry a raw element file (one [`RecordKind::Tensor`] record), and
//! later a `.safetensors` or `.npy` file (its header bytes as [`RecordKind::Verbatim`] records, each
//! activation tensor as a `Tensor` record, tensors of other dtypes verbatim) without a format change.
//!
//! Byte layout (all integers little-endian; `docs/FORMAT.md`, section "File container", is the prose spec):
//!
//! ```text
//! container header (40 bytes)
//!   0  magic        8 bytes  "BSPC\r\n\x1a\n"
//!   8  version      u32      1
//!  12  flags        u32      0 (reserved: a reader rejects unknown bits)
//!  16  source       u32      0 raw, 1 safetensors, 2 npy (what the original file was; informational)
//!  20  records      u64      number of records
//!  28  original_len u64      length of the original file (= sum of the records' original lengths)
//!  36  header_crc   u32      CRC-32 of bytes 0..36
//! then `records` times:
//!   record header (48 bytes)
//!   0  kind         u8       0 verbatim, 1 tensor
//!   1  dtype        u8       tensor: the DType code of src/format.rs; verbatim: 0
//!   2  flags        u8       bit 0 sign_pack (tensor only), bit 1 has_name; other bits 0
//!   3  reserved     u8       0
//!   4  name_len     u32      bytes of the UTF-8 name that follows the record header (0 without a name)
//!   8  elements     u64      tensor: element count; verbatim: 0
//!  16  original_len u64      bytes this record decodes to
//!  24  stored_len   u64      bytes stored after the name
//!  32  original_crc u32      CRC-32 of the decoded bytes (checked after decoding)
//!  36  stored_crc   u32      CRC-32 of the stored bytes (checked before decoding)
//!  40  reserved     u32      0
//!  44  record_crc   u32      CRC-32 of bytes 0..44 of this record header followed by the name
//!   name          name_len bytes
//!   stored        stored_len bytes: verbatim: the original bytes; tensor: one compact tensor stream
//!                 (docs/FORMAT.md, format version 1)
//! nothing after the last record.
//! ```
//!
//! Parsing is defensive: every length is checked against the bytes that remain before anything is
//! allocated, so a lying header cannot cause a huge allocation, and every inconsistency is an
//! [`Error::Corrupt`] naming the record and field. The tensor stream itself is checked by the decoder
//! (CPU or GPU); the container only checks that the stream header agrees with the record.

use bitsparse::error::{Error, Result};
use bitsparse::format::{self, DType, Options};

/// The container magic. The `\r\n`, `\x1a` and `\n` bytes make a text-mode transfer (line-ending
/// conversion) or a truncation at a DOS end-of-file marker show up as a bad magic, as in PNG.
pub const MAGIC: [u8; 8] = *b"BSPC\r\n\x1a\n";
/// Container version written by this library.
pub const VERSION: u32 = 1;
/// Bytes of the container header.
pub const HEADER_BYTES: usize = 40;
/// Bytes of a record header (without the name).
pub const RECORD_HEADER_BYTES: usize = 48;

/// Record flag bits.
pub mod record_flags {
    /// The tensor stream is sign-packed (must agree with the stream's own header).
    pub const SIGN_PACK: u8 = 1;
    /// A name follows the record header (a name may be empty, which is why this is not `name_len > 0`).
    pub const HAS_NAME: u8 = 2;
}

/// What kind of file the container was made from. Decoding never depends on it: it tells tools such as
/// `analyze` how to interpret the verbatim records.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A raw little-endian element file.
    Raw,
    /// A `.safetensors` file.
    Safetensors,
    /// A `.npy` file.
    Npy,
}

impl Source {
    /// Code stored in the header.
    pub fn code(self) -> u32 {
        match self {
            Source::Raw => 0,
            Source::Safetensors => 1,
            Source::Npy => 2,
        }
    }

    /// Inverse of [`Source::code`].
    pub fn from_code(c: u32) -> Option<Source> {
        [Source::Raw, Source::Safetensors, Source::Npy].into_iter().find(|s| s.code() == c)
    }

    /// Lower-case name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Source::Raw => "raw",
            Source::Safetensors => "safetensors",
            Source::Npy => "npy",
        }
    }
}

/// What a record stores.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// Bytes stored as they are.
    Verbatim,
    /// A compressed tensor stream.
    Tensor {
        /// Element type.
        dtype: DType,
        /// Element count.
        elements: u64,
        /// Whether the stream is sign-packed.
        sign_pack: bool,
    },
}

/// One record: a run of the original file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// What `stored` holds.
    pub kind: RecordKind,
    /// The tensor's name inside a `.safetensors` / `.npy` file; `None` for a raw file.
    pub name: Option<String>,
    /// Bytes this record decodes to.
    pub original_len: u64,
    /// CRC-32 of those bytes.
    pub original_crc: u32,
    /// The stored bytes (the original bytes for [`RecordKind::Verbatim`]).
    pub stored: Vec<u8>,
}

impl Record {
    /// A verbatim record of `bytes`.
    pub fn verbatim(bytes: &[u8], name: Option<String>) -> Record {
        Record {
            kind: RecordKind::Verbatim,
            name,
            original_len: bytes.len() as u64,
            original_crc: crc32fast::hash(bytes),
            stored: bytes.to_vec(),
        }
    }

    /// A tensor record of the raw little-endian elements `data`, compressed by `compress` (the GPU codec
    /// in the CLI, the CPU reference in tests). Checks that `data` is whole elements and that the stream
    /// `compress` returned describes this tensor.
    pub fn tensor(
        data: &[u8],
        dtype: DType,
        options: Options,
        name: Option<String>,
        compress: impl FnOnce(&[u8], DType, Options) -> Result<Vec<u8>>,
    ) -> Result<Record> {
        let elem = dtype.bytes();
        if data.len() as u64 % elem != 0 {
            return Err(Error::PartialElement { bytes: data.len() as u64, elem_bytes: elem });
        }
        let elements = data.len() as u64 / elem;
        let stored = compress(data, dtype, options)?;
        let record = Record {
            kind: RecordKind::Tensor { dtype, elements, sign_pack: options.sign_pack },
            name,
            original_len: data.len() as u64,
            original_crc: crc32fast::hash(data),
            stored,
        };
        // A compressor that returned a stream for another tensor is a bug, not bad input; catch it here
        // rather than in a later decompress.
        record
            .check_stream_header()
            .map_err(|e| Error::Wgpu(format!("compressor returned an inconsistent stream: {e}")))?;
        Ok(record)
    }

    /// The name for messages: `tensor `x``, `tensor` (unnamed), `verbatim bytes`.
    pub fn describe(&self) -> String {
        match (&self.kind, &self.name) {
            (RecordKind::Tensor { .. }, Some(n)) => format!("tensor `{n}`"),
            (RecordKind::Tensor { .. }, None) => "tensor".to_string(),
            (RecordKind::Verbatim, Some(n)) => format!("verbatim `{n}`"),
            (RecordKind::Verbatim, None) => "verbatim bytes".to_string(),
        }
    }

    /// Decodes the record with `decompress` (called for tensor records only) and checks the length and
    /// CRC of the result against the record.
    pub fn decode(&self, decompress: impl FnOnce(&[u8]) -> Result<Vec<u8>>) -> Result<Vec<u8>> {
        let out = match self.kind {
            RecordKind::Verbatim => self.stored.clone(),
            RecordKind::Tensor { .. } => decompress(&self.stored)?,
        };
        if out.len() as u64 != self.original_len {
            return Err(Error::Corrupt(format!(
                "decoded to {} bytes, the container says {}",
                out.len(),
                self.original_len
            )));
        }
        let crc = crc32fast::hash(&out);
        if crc != self.original_crc {
            return Err(Error::Corrupt(format!(
                "CRC of the decoded bytes is {crc:#010x}, the container says {:#010x}",
                self.original_crc
            )));
        }
        Ok(out)
    }

    /// Checks that a tensor record's stream header agrees with the record (dtype, element count, sign
    /// packing, and that the stream is at least as long as its fixed sections). Verbatim: always Ok.
    fn check_stream_header(&self) -> Result<()> {
        let RecordKind::Tensor { dtype, elements, sign_pack } = self.kind else { return Ok(()) };
        let hb = format::HEADER_BYTES as usize;
        if self.stored.len() < hb {
            return Err(Error::Corrupt(format!(
                "tensor stream of {} bytes is shorter than its header",
                self.stored.len()
            )));
        }
        // Either format version (the stream's own version byte says which; §13 stores any).
        let info = format::StreamInfo::from_bytes(&self.stored)?;
        if info.dtype != dtype || info.n != elements || info.options.sign_pack != sign_pack {
            return Err(Error::Corrupt(format!(
                "tensor stream header ({} elements of {}{}) disagrees with the record ({} elements of {}{})",
                info.n,
                info.dtype,
                if info.options.sign_pack { ", sign-packed" } else { "" },
                elements,
                dtype,
                if sign_pack { ", sign-packed" } else { "" },
            )));
        }
        if (self.stored.len() as u64) < info.fixed_bytes {
            return Err(Error::Corrupt(format!(
                "tensor stream of {} bytes is shorter than its header, directory and mask ({} bytes)",
                self.stored.len(),
                info.fixed_bytes
            )));
        }
        Ok(())
    }

    fn header_bytes(&self) -> [u8; RECORD_HEADER_BYTES] {
        let (kind, dtype, mut flags, elements) = match self.kind {
            RecordKind::Verbatim => (0u8, 0u8, 0u8, 0u64),
            RecordKind::Tensor { dtype, elements, sign_pack } => {
                (1, dtype.code(), if sign_pack { record_flags::SIGN_PACK } else { 0 }, elements)
            }
        };
        if self.name.is_some() {
            flags |= record_flags::HAS_NAME;
        }
        let name = self.name.as_deref().unwrap_or("").as_bytes();
        let mut h = [0u8; RECORD_HEADER_BYTES];
        h[0] = kind;
        h[1] = dtype;
        h[2] = flags;
        h[4..8].copy_from_slice(&(name.len() as u32).to_le_bytes());
        h[8..16].copy_from_slice(&elements.to_le_bytes());
        h[16..24].copy_from_slice(&self.original_len.to_le_bytes());
        h[24..32].copy_from_slice(&(self.stored.len() as u64).to_le_bytes());
        h[32..36].copy_from_slice(&self.original_crc.to_le_bytes());
        h[36..40].copy_from_slice(&crc32fast::hash(&self.stored).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[..44]);
        crc.update(name);
        h[44..48].copy_from_slice(&crc.finalize().to_le_bytes());
        h
    }
}

/// A parsed or to-be-written container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    /// What the original file was.
    pub source: Source,
    /// The records, in file order.
    pub records: Vec<Record>,
}

impl Container {
    /// A container for a raw element file: one unnamed tensor record.
    pub fn raw(
        data: &[u8],
        dtype: DType,
        options: Options,
        compress: impl FnOnce(&[u8], DType, Options) -> Result<Vec<u8>>,
    ) -> Result<Container> {
        Ok(Container { source: Source::Raw, records: vec![Record::tensor(data, dtype, options, None, compress)?] })
    }

    /// Length of the original file.
    pub fn original_len(&self) -> u64 {
        self.records.iter().map(|r| r.original_len).sum()
    }

    /// Bytes of [`Container::to_bytes`].
    pub fn encoded_len(&self) -> u64 {
        HEADER_BYTES as u64
            + self
                .records
                .iter()
                .map(|r| {
                    RECORD_HEADER_BYTES as u64 + r.name.as_ref().map_or(0, |n| n.len() as u64) + r.stored.len() as u64
                })
                .sum::<u64>()
    }

    /// Writes the container to `w`.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&0u32.to_le_bytes());
        h[16..20].copy_from_slice(&self.source.code().to_le_bytes());
        h[20..28].copy_from_slice(&(self.records.len() as u64).to_le_bytes());
        h[28..36].copy_from_slice(&self.original_len().to_le_bytes());
        let crc = crc32fast::hash(&h[..36]);
        h[36..40].copy_from_slice(&crc.to_le_bytes());
        w.write_all(&h)?;
        for r in &self.records {
            w.write_all(&r.header_bytes())?;
            if let Some(n) = &r.name {
                w.write_all(n.as_bytes())?;
            }
            w.write_all(&r.stored)?;
        }
        Ok(())
    }

    /// The container as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len() as usize);
        self.write_to(&mut v).expect("writing to a Vec cannot fail");
        v
    }

    /// Whether `bytes` start with the container magic (for tools that accept several file kinds).
    pub fn has_magic(bytes: &[u8]) -> bool {
        bytes.starts_with(&MAGIC)
    }

    /// Parses and checks a container: magic, version, flags, every CRC except the decoded bytes' (which
    /// [`Record::decode`] checks), every length against the bytes that remain, and each tensor stream's
    /// header against its record.
    pub fn parse(bytes: &[u8]) -> Result<Container> {
        let mut rd = Reader { bytes, pos: 0 };
        let h = rd.take(HEADER_BYTES as u64, "container header")?;
        if h[0..8] != MAGIC {
            return Err(Error::Corrupt("not a bitsparse container (bad magic)".into()));
        }
        let crc = u32_at(h, 36);
        if crc32fast::hash(&h[..36]) != crc {
            return Err(Error::Corrupt("container header CRC mismatch".into()));
        }
        let version = u32_at(h, 8);
        if version != VERSION {
            return Err(Error::Corrupt(format!(
                "unsupported container version {version} (this build reads {VERSION})"
            )));
        }
        let flags = u32_at(h, 12);
        if flags != 0 {
            return Err(Error::Corrupt(format!("unknown container flags {flags:#x}")));
        }
        let source = Source::from_code(u32_at(h, 16))
            .ok_or_else(|| Error::Corrupt(format!("unknown container source kind {}", u32_at(h, 16))))?;
        let count = u64_at(h, 20);
        let original_len = u64_at(h, 28);
        // Every record takes at least a record header: a larger count is a lie, caught before allocating.
        if count > rd.remaining() / RECORD_HEADER_BYTES as u64 {
            return Err(Error::Corrupt(format!(
                "container claims {count} records, but only {} bytes follow the header",
                rd.remaining()
            )));
        }
        let mut records = Vec::with_capacity(count as usize);
        for i in 0..count {
            records.push(parse_record(&mut rd, i)?);
        }
        if rd.remaining() != 0 {
            return Err(Error::Corrupt(format!("{} unexpected bytes after the last record", rd.remaining())));
        }
        let c = Container { source, records };
        // Sum with overflow check: lying lengths must not wrap around to a plausible total.
        let total = c.records.iter().try_fold(0u64, |a, r| a.checked_add(r.original_len));
        if total != Some(original_len) {
            return Err(Error::Corrupt(format!(
                "records decode to {} bytes, the container header says {original_len}",
                total.map_or("more than 2^64".to_string(), |t| t.to_string())
            )));
        }
        Ok(c)
    }

    /// Decodes every record (tensor records through `decompress`) and concatenates them: the original
    /// file. An error names the record.
    pub fn decode(&self, mut decompress: impl FnMut(&[u8]) -> Result<Vec<u8>>) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            let bytes = r.decode(&mut decompress).map_err(|e| with_record(e, i as u64, r))?;
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }
}

/// `e` with "record i (what): " in front of its message, for corrupt data; other errors pass unchanged
/// (the CLI adds the record's name to those).
pub fn with_record(e: Error, index: u64, r: &Record) -> Error {
    match e {
        Error::Corrupt(m) => Error::Corrupt(format!("record {index} ({}): {m}", r.describe())),
        other => other,
    }
}

fn parse_record(rd: &mut Reader<'_>, index: u64) -> Result<Record> {
    let what = |m: &str| format!("record {index}: {m}");
    let h = rd.take(RECORD_HEADER_BYTES as u64, &what("header"))?;
    let name_len = u32_at(h, 4) as u64;
    let name_bytes = rd.take(name_len, &what("name"))?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&h[..44]);
    crc.update(name_bytes);
    if crc.finalize() != u32_at(h, 44) {
        return Err(Error::Corrupt(what("header CRC mismatch")));
    }
    let (kind, dtype_code, flags) = (h[0], h[1], h[2]);
    if h[3] != 0 || u32_at(h, 40) != 0 {
        return Err(Error::Corrupt(what("reserved header bytes are not zero")));
    }
    let known = record_flags::SIGN_PACK | record_flags::HAS_NAME;
    if flags & !known != 0 {
        return Err(Error::Corrupt(what(&format!("unknown flags {flags:#x}"))));
    }
    let elements = u64_at(h, 8);
    let original_len = u64_at(h, 16);
    let stored_len = u64_at(h, 24);
    let name = if flags & record_flags::HAS_NAME != 0 {
        Some(String::from_utf8(name_bytes.to_vec()).map_err(|_| Error::Corrupt(what("name is not UTF-8")))?)
    } else if name_len != 0 {
        return Err(Error::Corrupt(what("name bytes present without the has-name flag")));
    } else {
        None
    };
    let kind = match kind {
        0 => {
            if dtype_code != 0 || flags & record_flags::SIGN_PACK != 0 || elements != 0 || stored_len != original_len {
                return Err(Error::Corrupt(what("verbatim record with tensor fields set")));
            }
            RecordKind::Verbatim
        }
        1 => {
            let dtype = DType::from_code(dtype_code)
                .ok_or_else(|| Error::Corrupt(what(&format!("unknown dtype code {dtype_code}"))))?;
            if elements.checked_mul(dtype.bytes()) != Some(original_len) {
                return Err(Error::Corrupt(what(&format!(
                    "{elements} elements of {dtype} do not make {original_len} bytes"
                ))));
            }
            RecordKind::Tensor { dtype, elements, sign_pack: flags & record_flags::SIGN_PACK != 0 }
        }
        k => return Err(Error::Corrupt(what(&format!("unknown record kind {k}")))),
    };
    let stored = rd.take(stored_len, &what("stored bytes"))?;
    if crc32fast::hash(stored) != u32_at(h, 36) {
        return Err(Error::Corrupt(what("CRC of the stored bytes mismatch")));
    }
    let record = Record { kind, name, original_len, original_crc: u32_at(h, 32), stored: stored.to_vec() };
    if kind == RecordKind::Verbatim && record.original_crc != u32_at(h, 36) {
        return Err(Error::Corrupt(what("verbatim record whose two CRCs differ")));
    }
    record.check_stream_header().map_err(|e| with_record(e, index, &record))?;
    Ok(record)
}

/// A cursor that refuses to read past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    /// The next `len` bytes; `Corrupt` naming `what` if fewer remain (checked before any allocation).
    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8]> {
        if len > self.remaining() {
            return Err(Error::Corrupt(format!(
                "truncated: {what} needs {len} bytes at offset {}, {} remain",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.bytes[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(s)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5], b[at + 6], b[at + 7]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitsparse::format::Layout;

    /// A stand-in compressor that produces a valid-looking stream header followed by the raw bytes, so
    /// these tests exercise the container alone.
    fn fake_compress(data: &[u8], dtype: DType, options: Options) -> Result<Vec<u8>> {
        let n = data.len() as u64 / dtype.bytes();
        let layout = Layout::new(dtype, n, options)?;
        let mut v: Vec<u8> = layout.header(0, 0, 0, 0).iter().flat_map(|w| w.to_le_bytes()).collect();
        v.resize(layout.values_offset as usize * 4, 0);
        v.extend_from_slice(data);
        Ok(v)
    }

    fn fake_decompress(stream: &[u8]) -> Result<Vec<u8>> {
        let words: Vec<u32> = stream[..32].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        let (l, _) = Layout::from_header(&words)?;
        Ok(stream[l.values_offset as usize * 4..].to_vec())
    }

    fn sample() -> Container {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
        Container {
            source: Source::Safetensors,
            records: vec![
                Record::verbatim(b"{\"header\":1}", None),
                Record::tensor(&data, DType::Bf16, Options::default(), Some("layer.0".into()), fake_compress).unwrap(),
                Record::tensor(&data[..33], DType::E4m3, Options::SIGN_PACK, Some(String::new()), fake_compress)
                    .unwrap(),
                Record::verbatim(b"", Some("tail".into())),
            ],
        }
    }

    #[test]
    fn round_trip_bytes_and_decode() {
        let c = sample();
        let bytes = c.to_bytes();
        assert_eq!(bytes.len() as u64, c.encoded_len());
        let p = Container::parse(&bytes).unwrap();
        assert_eq!(p, c);
        let data: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
        let mut want = b"{\"header\":1}".to_vec();
        want.extend_from_slice(&data);
        want.extend_from_slice(&data[..33]);
        assert_eq!(p.decode(fake_decompress).unwrap(), want);
    }

    #[test]
    fn every_single_byte_flip_is_caught() {
        let bytes = sample().to_bytes();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let r = Container::parse(&b).and_then(|c| c.decode(fake_decompress));
            assert!(matches!(r, Err(Error::Corrupt(_))), "flip at byte {i} was not caught: {r:?}");
        }
    }

    #[test]
    fn every_truncation_is_caught() {
        let bytes = sample().to_bytes();
        for len in 0..bytes.len() {
            assert!(matches!(Container::parse(&bytes[..len]), Err(Error::Corrupt(_))), "truncation to {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(Container::parse(&longer), Err(Error::Corrupt(_))));
    }

    /// Rewrites a header field and fixes the header CRC, so the check behind the CRC is what fails.
    fn with_header_field(bytes: &[u8], at: usize, val: &[u8]) -> Vec<u8> {
        let mut b = bytes.to_vec();
        b[at..at + val.len()].copy_from_slice(val);
        let crc = crc32fast::hash(&b[..36]);
        b[36..40].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn corrupt_message(bytes: &[u8]) -> String {
        match Container::parse(bytes) {
            Err(Error::Corrupt(m)) => m,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn lying_header_fields_are_named() {
        let bytes = sample().to_bytes();
        assert!(corrupt_message(&with_header_field(&bytes, 8, &2u32.to_le_bytes())).contains("version 2"));
        assert!(corrupt_message(&with_header_field(&bytes, 12, &1u32.to_le_bytes())).contains("flags"));
        assert!(corrupt_message(&with_header_field(&bytes, 16, &9u32.to_le_bytes())).contains("source"));
        // A huge record count must fail before allocating.
        assert!(corrupt_message(&with_header_field(&bytes, 20, &u64::MAX.to_le_bytes())).contains("records"));
        assert!(corrupt_message(&with_header_field(&bytes, 28, &1u64.to_le_bytes())).contains("header says 1"));
    }

    /// Rewrites a field of record 0 and fixes its record CRC.
    fn with_record_field(bytes: &[u8], at: usize, val: &[u8]) -> Vec<u8> {
        let mut b = bytes.to_vec();
        let r = HEADER_BYTES;
        b[r + at..r + at + val.len()].copy_from_slice(val);
        let name_len = u32_at(&b, r + 4) as usize;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&b[r..r + 44]);
        crc.update(&b[r + 48..(r + 48 + name_len).min(b.len())]);
        let crc = crc.finalize();
        b[r + 44..r + 48].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn lying_record_fields_are_named() {
        let c = Container {
            source: Source::Raw,
            records: vec![Record::tensor(&[1, 0, 2, 0], DType::F16, Options::default(), None, fake_compress).unwrap()],
        };
        let bytes = c.to_bytes();
        assert!(corrupt_message(&with_record_field(&bytes, 0, &[7])).contains("unknown record kind 7"));
        assert!(corrupt_message(&with_record_field(&bytes, 1, &[9])).contains("unknown dtype code 9"));
        assert!(corrupt_message(&with_record_field(&bytes, 2, &[0x80])).contains("unknown flags"));
        assert!(corrupt_message(&with_record_field(&bytes, 24, &u64::MAX.to_le_bytes())).contains("truncated"));
        assert!(corrupt_message(&with_record_field(&bytes, 4, &u32::MAX.to_le_bytes())).contains("truncated"));
        assert!(corrupt_message(&with_record_field(&bytes, 8, &3u64.to_le_bytes())).contains("do not make"));
        // A sign-pack flag that disagrees with the stream's own header.
        assert!(corrupt_message(&with_record_field(&bytes, 2, &[1])).contains("disagrees"));
        // A wrong decoded-bytes CRC is only visible after decoding.
        let b = with_record_field(&bytes, 32, &0u32.to_le_bytes());
        let p = Container::parse(&b).unwrap();
        assert!(
            matches!(p.decode(fake_decompress), Err(Error::Corrupt(m)) if m.contains("record 0 (tensor)") && m.contains("CRC"))
        );
    }

    #[test]
    fn tensor_record_refuses_partial_elements() {
        let r = Record::tensor(&[1, 2, 3], DType::Bf16, Options::default(), None, fake_compress);
        assert!(matches!(r, Err(Error::PartialElement { bytes: 3, elem_bytes: 2 })));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Arbitrary damage (byte overwrites, a cut, an insertion) never panics, and whatever parses
        /// still decodes to checked bytes or a `Corrupt` error.
        #[test]
        fn damaged_containers_never_panic(
            edits in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..6),
            cut in proptest::option::of(0usize..4096),
            insert in proptest::option::of((0usize..4096, proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64))),
        ) {
            let mut b = sample().to_bytes();
            for (at, v) in edits {
                let i = at % b.len();
                b[i] = v;
            }
            if let Some((at, bytes)) = insert {
                let i = at % (b.len() + 1);
                b.splice(i..i, bytes);
            }
            if let Some(c) = cut {
                b.truncate(c % (b.len() + 1));
            }
            if let Ok(c) = Container::parse(&b) {
                match c.decode(fake_decompress) {
                    Ok(_) | Err(Error::Corrupt(_)) => {}
                    Err(e) => proptest::prop_assert!(false, "unexpected error kind {e:?}"),
                }
            }
        }

        /// Random bytes behind a valid container header (correct CRC, so record parsing is reached):
        /// never a panic, never anything but `Corrupt`.
        #[test]
        fn random_records_are_corrupt(
            count in 0u64..4,
            total in 0u64..1000,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
        ) {
            let b = Container { source: Source::Raw, records: vec![] }.to_bytes();
            let mut b = with_header_field(&b, 20, &count.to_le_bytes());
            b = with_header_field(&b, 28, &total.to_le_bytes());
            b.extend_from_slice(&tail);
            match Container::parse(&b) {
                // The one valid case: an empty container.
                Ok(c) => proptest::prop_assert!(count == 0 && total == 0 && tail.is_empty() && c.records.is_empty()),
                Err(e) => proptest::prop_assert!(matches!(e, Error::Corrupt(_)), "{e:?}"),
            }
        }
    }

    #[test]
    fn empty_raw_file() {
        let c = Container::raw(&[], DType::E5m2, Options::SIGN_PACK, fake_compress).unwrap();
        let p = Container::parse(&c.to_bytes()).unwrap();
        assert_eq!(p.decode(fake_decompress).unwrap(), Vec::<u8>::new());
    }
}
