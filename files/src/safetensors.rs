//! `.safetensors`: `u64` little-endian header length N, N bytes of UTF-8 JSON (an object: tensor name →
//! `{"dtype", "shape", "data_offsets": [begin, end]}`, plus an optional `"__metadata__"` object of
//! strings), then the data section, which the tensors' byte ranges must cover with neither gaps nor
//! overlaps.
//!
//! The header is parsed here rather than through `safetensors::SafeTensors::read_metadata` because a bad
//! file must be reported naming the tensor at fault, duplicate names must not silently collapse, and
//! zero-length tensors may sit anywhere; the `safetensors` crate still decides which dtype strings the
//! format defines and their widths ([`::safetensors::Dtype`]), so "unknown dtype" means the same here as
//! in the Python library.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{elements_of, shape_string, Elem, FileError, Kind, ParsedFile, Tensor};
use bitsparse::format::DType;

/// Largest header accepted (the `safetensors` crate's own limit): a lying length cannot make us allocate.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The header's top-level object, in file order, with duplicate keys refused (serde_json's maps would
/// keep the last one silently).
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entries, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut v: Vec<(String, Value)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                while let Some((k, val)) = map.next_entry::<String, Value>()? {
                    if !seen.insert(k.clone()) {
                        return Err(serde::de::Error::custom(format!("duplicate key `{k}`")));
                    }
                    v.push((k, val));
                }
                Ok(Entries(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// How `analyze` / `compress` treat a safetensors dtype.
pub fn elem_of(dtype: ::safetensors::Dtype) -> Elem {
    use ::safetensors::Dtype as D;
    match dtype {
        D::BF16 => Elem::Act(DType::Bf16),
        D::F16 => Elem::Act(DType::F16),
        D::F8_E4M3 => Elem::Act(DType::E4m3),
        D::F8_E5M2 => Elem::Act(DType::E5m2),
        D::F32 => Elem::Act(DType::F32),
        other => Elem::Other(format!("{other} is not an activation dtype")),
    }
}

/// Parses and checks a whole `.safetensors` file.
pub fn parse(bytes: &[u8]) -> Result<ParsedFile, FileError> {
    if bytes.len() < 8 {
        return Err(FileError::file(format!(
            "truncated: {} bytes, a .safetensors file starts with an 8-byte header length",
            bytes.len()
        )));
    }
    let n = u64::from_le_bytes(bytes[..8].try_into().map_err(|_| FileError::file("truncated header length"))?);
    let rest = (bytes.len() - 8) as u64;
    if n > rest {
        return Err(FileError::file(format!(
            "header length {n} runs past the end of the file ({rest} bytes follow the length)"
        )));
    }
    if n > MAX_HEADER_BYTES {
        return Err(FileError::file(format!("header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")));
    }
    let header_end = 8 + n as usize;
    let text = std::str::from_utf8(&bytes[8..header_end])
        .map_err(|e| FileError::file(format!("header is not UTF-8 ({e})")))?;
    let entries: Entries =
        serde_json::from_str(text).map_err(|e| FileError::file(format!("header is not a valid JSON object: {e}")))?;
    let data_len = bytes.len() - header_end;

    let mut tensors = Vec::new();
    for (name, value) in entries.0 {
        if name == "__metadata__" {
            check_metadata(&value)?;
            continue;
        }
        tensors.push(parse_entry(&name, &value, header_end, data_len)?);
    }
    check_layout(&mut tensors, header_end, data_len)?;
    Ok(ParsedFile { kind: Kind::Safetensors, header: 0..header_end, tensors })
}

fn check_metadata(v: &Value) -> Result<(), FileError> {
    let Value::Object(m) = v else {
        return Err(FileError::file("`__metadata__` is not an object of strings"));
    };
    if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_string()) {
        return Err(FileError::file(format!("`__metadata__` entry `{k}` is not a string")));
    }
    Ok(())
}

fn as_u64_list(v: Option<&Value>) -> Option<Vec<u64>> {
    v?.as_array()?.iter().map(Value::as_u64).collect()
}

fn parse_entry(name: &str, v: &Value, header_end: usize, data_len: usize) -> Result<Tensor, FileError> {
    let err = |m: String| FileError::tensor(name, m);
    let Value::Object(m) = v else {
        return Err(err("entry is not a JSON object".into()));
    };
    let dtype_name =
        m.get("dtype").and_then(Value::as_str).ok_or_else(|| err("missing or non-string `dtype`".into()))?;
    let dtype: ::safetensors::Dtype = serde_json::from_value(Value::String(dtype_name.to_string()))
        .map_err(|_| err(format!("unknown dtype `{dtype_name}` (not a safetensors dtype)")))?;
    let shape = as_u64_list(m.get("shape"))
        .ok_or_else(|| err("missing `shape`, or not a list of non-negative integers".into()))?;
    let offsets = as_u64_list(m.get("data_offsets"))
        .filter(|o| o.len() == 2)
        .ok_or_else(|| err("missing `data_offsets`, or not two non-negative integers".into()))?;
    let (begin, end) = (offsets[0], offsets[1]);
    let elements = elements_of(&shape).ok_or_else(|| err(format!("shape {} overflows", shape_string(&shape))))?;
    let bits = dtype.bitsize() as u64;
    let need_bits = elements
        .checked_mul(bits)
        .ok_or_else(|| err(format!("shape {} of {dtype} overflows", shape_string(&shape))))?;
    // As the format's reference implementation: sub-byte dtypes must fill whole bytes.
    if need_bits % 8 != 0 {
        return Err(err(format!("shape {} of {dtype} is not a whole number of bytes", shape_string(&shape))));
    }
    let need = need_bits / 8;
    if begin > end {
        return Err(err(format!("data_offsets [{begin}, {end}] end before they begin")));
    }
    if end > data_len as u64 {
        return Err(err(format!(
            "data_offsets [{begin}, {end}] are out of range: the data section has {data_len} bytes"
        )));
    }
    if end - begin != need {
        return Err(err(format!(
            "shape {} of {dtype} needs {need} bytes, but data_offsets [{begin}, {end}] span {}",
            shape_string(&shape),
            end - begin
        )));
    }
    Ok(Tensor {
        name: name.to_string(),
        dtype_name: dtype_name.to_string(),
        elem: elem_of(dtype),
        shape,
        elements,
        range: header_end + begin as usize..header_end + end as usize,
    })
}

/// Sorts the tensors by position and checks they tile the data section: no overlap, no gap, nothing
/// after the last one. Zero-length tensors cannot overlap anything and may sit anywhere in range.
fn check_layout(tensors: &mut [Tensor], header_end: usize, data_len: usize) -> Result<(), FileError> {
    tensors.sort_by_key(|t| (t.range.start, t.range.end));
    let rel = |x: usize| x - header_end;
    let mut pos = header_end;
    let mut prev: Option<&Tensor> = None;
    for t in tensors.iter().filter(|t| !t.range.is_empty()) {
        if t.range.start < pos {
            let other = prev.map_or(String::new(), |p| format!(" `{}`", p.name));
            return Err(FileError::tensor(
                &t.name,
                format!(
                    "data_offsets [{}, {}] overlap tensor{other} (which ends at {})",
                    rel(t.range.start),
                    rel(t.range.end),
                    rel(pos)
                ),
            ));
        }
        if t.range.start > pos {
            return Err(FileError::tensor(
                &t.name,
                format!(
                    "bytes {}..{} of the data section, before this tensor, belong to no tensor",
                    rel(pos),
                    rel(t.range.start)
                ),
            ));
        }
        pos = t.range.end;
        prev = Some(t);
    }
    if pos != header_end + data_len {
        return Err(FileError::file(format!("bytes {}..{data_len} of the data section belong to no tensor", rel(pos))));
    }
    Ok(())
}

/// Writes a `.safetensors` file of `(name, dtype, shape, bytes)` tensors, in that order, the way the
/// format's own writers do (header padded with spaces to a multiple of 8 bytes). For tests and demos.
pub fn write(tensors: &[(&str, &str, &[u64], &[u8])], metadata: Option<&[(&str, &str)]>) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    if let Some(md) = metadata {
        let m: serde_json::Map<String, Value> =
            md.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
        header.insert("__metadata__".into(), Value::Object(m));
    }
    let mut off = 0usize;
    for (name, dtype, shape, data) in tensors {
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [off, off + data.len()]}),
        );
        off += data.len();
    }
    let mut text = Value::Object(header).to_string().into_bytes();
    while (8 + text.len()) % 8 != 0 {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    for (_, _, _, data) in tensors {
        out.extend_from_slice(data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Vec<u8> {
        write(
            &[
                ("a", "BF16", &[2, 2], &[1, 0, 0, 0, 0, 0, 2, 0x80]),
                ("ids", "I64", &[1], &[7, 0, 0, 0, 0, 0, 0, 0]),
                ("empty", "F8_E4M3", &[0, 5], &[]),
                ("f", "F32", &[1], &[0, 0, 0x80, 0x3f]),
            ],
            Some(&[("format", "pt")]),
        )
    }

    #[test]
    fn parses_and_tiles() {
        let b = file();
        let p = parse(&b).unwrap();
        p.check_coverage(b.len()).unwrap();
        let names: Vec<&str> = p.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "ids", "empty", "f"]);
        assert_eq!(p.tensors[0].elem, Elem::Act(DType::Bf16));
        assert!(matches!(p.tensors[1].elem, Elem::Other(_)));
        assert_eq!(p.tensors[2].elements, 0);
        assert_eq!(p.tensors[3].elem, Elem::Act(DType::F32));
        assert_eq!(&b[p.tensors[3].range.clone()], &[0, 0, 0x80, 0x3f]);
    }

    fn with_header(h: &str, data: &[u8]) -> Vec<u8> {
        let mut v = (h.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(h.as_bytes());
        v.extend_from_slice(data);
        v
    }

    fn err(b: &[u8]) -> FileError {
        parse(b).unwrap_err()
    }

    #[test]
    fn bad_files_name_the_tensor() {
        let e = err(&with_header(r#"{"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,2]}}"#, &[0, 0]));
        assert_eq!(e.tensor.as_deref(), Some("x"));
        assert!(e.message.contains("unknown dtype `Q7`"), "{e}");
        let e = err(&with_header(r#"{"x":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}"#, &[0; 4]));
        assert!(e.message.contains("needs 6 bytes"), "{e}");
        let e = err(&with_header(r#"{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}"#, &[0; 2]));
        assert!(e.message.contains("out of range"), "{e}");
        let e = err(&with_header(
            r#"{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#,
            &[0; 4],
        ));
        assert_eq!(e.tensor.as_deref(), Some("y"));
        assert!(e.message.contains("overlap tensor `x`"), "{e}");
        let e = err(&with_header(r#"{"x":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}"#, &[0; 3]));
        assert!(e.message.contains("belong to no tensor"), "{e}");
        let e = err(&with_header(r#"{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#, &[0; 3]));
        assert!(e.tensor.is_none() && e.message.contains("belong to no tensor"), "{e}");
        let e = err(&with_header(
            r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
            &[0; 2],
        ));
        assert!(e.message.contains("duplicate key `x`"), "{e}");
        let e = err(&with_header(r#"{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}"#, &[0; 1]));
        assert!(e.message.contains("shape"), "{e}");
        let e = err(&with_header(r#"{"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}}"#, &[0]));
        assert!(e.message.contains("overflows"), "{e}");
        let mut lying = with_header("{}", &[]);
        lying[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(err(&lying).message.contains("runs past the end"));
        assert!(err(&[1, 2, 3]).message.contains("truncated"));
        assert!(err(&with_header("[1]", &[])).message.contains("JSON object"));
        assert!(err(&with_header(r#"{"__metadata__":{"a":1}}"#, &[])).message.contains("__metadata__"));
    }

    #[test]
    fn zero_length_tensors_may_sit_anywhere() {
        let b = with_header(
            r#"{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"e":{"dtype":"BF16","shape":[0],"data_offsets":[2,2]}}"#,
            &[1, 2, 3, 4],
        );
        let p = parse(&b).unwrap();
        p.check_coverage(b.len()).unwrap();
        assert_eq!(p.tensors.len(), 2);
    }
}
