//! NumPy `.npy` (format versions 1.0, 2.0, 3.0): `\x93NUMPY`, major and minor version bytes, a header
//! length (`u16` in version 1, `u32` after), a Python dict literal
//! `{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4), }`, then the array's bytes, exactly
//! `prod(shape) × itemsize` of them.
//!
//! Activation dtypes: `<f2` (F16), `<f4` (F32), and the void types ml_dtypes writes for
//! bfloat16 (`V2`) and FP8 (`V1`), which need `--dtype` to say what they are. Other dtypes NumPy defines
//! are skipped (verbatim in `compress`); a descr NumPy does not define is a bad file. Fortran order does
//! not matter to a lossless elementwise codec, only to which elements share a tile.

use super::{elements_of, shape_string, Elem, FileError, Kind, ParsedFile, Tensor, NPY_MAGIC};
use bitsparse::format::DType;

/// Deepest nesting accepted in the header literal (structured dtypes nest; a hostile header must not
/// exhaust the stack).
const MAX_DEPTH: usize = 32;

/// A Python literal of the subset `.npy` headers use.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Str(String),
    Int(u64),
    Bool(bool),
    None,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

struct LitParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> LitParser<'a> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.pos).copied()
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {} of the header dict", self.pos))
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(&format!("expected `{}`", c as char))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_DEPTH {
            return self.fail("nesting too deep");
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let mut out = Vec::new();
                loop {
                    match self.s.get(self.pos) {
                        None => return self.fail("unterminated string"),
                        Some(&c) if c == q => {
                            self.pos += 1;
                            break;
                        }
                        Some(b'\\') => {
                            let Some(&e) = self.s.get(self.pos + 1) else { return self.fail("unterminated string") };
                            out.push(e);
                            self.pos += 2;
                        }
                        Some(&c) => {
                            out.push(c);
                            self.pos += 1;
                        }
                    }
                }
                String::from_utf8(out).map(Lit::Str).or_else(|_| self.fail("string is not UTF-8"))
            }
            // Python's rule: `(600)` is the integer 600 in parentheses, not a tuple; a one-element tuple
            // is `(600,)`. NumPy refuses `'shape': (600)`, and so do we (it is not a tuple).
            Some(b'(') => self.seq(b')', depth).map(|(mut items, comma)| match (items.len(), comma) {
                (1, false) => items.remove(0),
                _ => Lit::Tuple(items),
            }),
            Some(b'[') => self.seq(b']', depth).map(|(items, _)| Lit::List(items)),
            Some(b'{') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        return Ok(Lit::Dict(items));
                    }
                    let k = self.value(depth + 1)?;
                    self.expect(b':')?;
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {}
                        _ => return self.fail("expected `,` or `}`"),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                // A trailing `L` (Python 2 longs) is accepted as NumPy does.
                if self.s.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                let digits = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("").trim_end_matches('L');
                digits.parse::<u64>().map(Lit::Int).or_else(|_| self.fail("integer out of range"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
                {
                    self.pos += 1;
                }
                match &self.s[start..self.pos] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    _ => {
                        self.pos = start;
                        self.fail("unknown name")
                    }
                }
            }
            Some(b'-') => self.fail("negative number"),
            Some(_) => self.fail("unexpected character"),
            None => self.fail("unexpected end"),
        }
    }

    /// The items of a `(…)` or `[…]` sequence, and whether any comma separated or ended them.
    fn seq(&mut self, close: u8, depth: usize) -> Result<(Vec<Lit>, bool), String> {
        self.pos += 1;
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok((items, comma));
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    comma = true;
                }
                Some(c) if c == close => {}
                _ => return self.fail(&format!("expected `,` or `{}`", close as char)),
            }
        }
    }
}

/// A parsed `descr` string.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Descr {
    /// `<`, `>`, `|` or `=`.
    order: u8,
    /// NumPy kind character (`f`, `i`, `V`, ...).
    kind: u8,
    /// Bytes per element, when the descr fixes it.
    itemsize: Option<u64>,
}

/// Parses a simple descr (`<f2`, `|V2`, `<M8[ns]`, `<U5`, `|O`). Structured descrs (lists) are handled by
/// the caller.
fn parse_descr(s: &str) -> Result<Descr, String> {
    let b = s.as_bytes();
    let (order, rest) = match b.first() {
        Some(&c @ (b'<' | b'>' | b'|' | b'=')) => (c, &b[1..]),
        _ => (b'|', b),
    };
    let Some((&kind, rest)) = rest.split_first() else { return Err(format!("descr `{s}` is empty")) };
    let digits_end = rest.iter().position(|c| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (digits, tail) = rest.split_at(digits_end);
    let n: Option<u64> = if digits.is_empty() {
        None
    } else {
        Some(
            std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| format!("descr `{s}`: size out of range"))?,
        )
    };
    let tail_ok = match kind {
        b'm' | b'M' => tail.is_empty() || (tail.starts_with(b"[") && tail.ends_with(b"]") && tail.len() <= 12),
        _ => tail.is_empty(),
    };
    if !tail_ok {
        return Err(format!("descr `{s}` is not a NumPy dtype"));
    }
    let itemsize = match (kind, n) {
        (b'b', None | Some(1)) => Some(1),
        (b'i' | b'u', Some(s @ (1 | 2 | 4 | 8))) => Some(s),
        (b'f', Some(s @ (2 | 4 | 8 | 16))) | (b'f', Some(s @ 12)) => Some(s),
        (b'c', Some(s @ (8 | 16 | 32 | 24))) => Some(s),
        (b'm' | b'M', Some(8)) => Some(8),
        (b'S' | b'a' | b'V', Some(s)) => Some(s),
        (b'U', Some(s)) => Some(s.checked_mul(4).ok_or_else(|| format!("descr `{s}`: size out of range"))?),
        (b'O', None | Some(8)) => None,
        _ => return Err(format!("descr `{s}` is not a NumPy dtype")),
    };
    Ok(Descr { order, kind, itemsize })
}

/// What `analyze` / `compress` make of a descr, given `--dtype`.
fn elem_of(descr_text: &str, d: &Descr, dtype: Option<DType>) -> Result<Elem, String> {
    let little = matches!(d.order, b'<' | b'=' | b'|');
    let act = match (d.kind, d.itemsize, little) {
        (b'f', Some(2), true) => Some(Elem::Act(DType::F16)),
        (b'f', Some(4), true) => Some(Elem::Act(DType::F32)),
        (b'V', Some(2), _) => match dtype {
            Some(t @ (DType::Bf16 | DType::F16)) => return Ok(Elem::Act(t)),
            Some(t) => {
                return Err(format!("descr `{descr_text}` holds 2-byte elements, --dtype {t} is {} byte(s)", t.bytes()))
            }
            None => {
                return Err(format!(
                    "descr `{descr_text}` (2-byte void, as ml_dtypes writes bfloat16) needs --dtype bf16 or --dtype f16"
                ))
            }
        },
        (b'V', Some(1), _) => match dtype {
            Some(t @ (DType::E4m3 | DType::E5m2)) => return Ok(Elem::Act(t)),
            Some(t) => {
                return Err(format!("descr `{descr_text}` holds 1-byte elements, --dtype {t} is {} bytes", t.bytes()))
            }
            None => {
                return Err(format!(
                    "descr `{descr_text}` (1-byte void, as ml_dtypes writes FP8) needs --dtype e4m3 or --dtype e5m2"
                ))
            }
        },
        _ => None,
    };
    match (act, dtype) {
        (Some(Elem::Act(DType::F16)), Some(DType::F16) | None) => Ok(Elem::Act(DType::F16)),
        (Some(Elem::Act(DType::F32)), Some(DType::F32) | None) => Ok(Elem::Act(DType::F32)),
        (Some(_), Some(t)) | (None, Some(t)) => {
            Err(format!("--dtype {t} does not fit the file's descr `{descr_text}`"))
        }
        (None, None) if !little && d.kind == b'f' => Ok(Elem::Other(format!("`{descr_text}` is big-endian"))),
        (None, None) => Ok(Elem::Other(format!("`{descr_text}` is not an activation dtype"))),
        (Some(e), None) => Ok(e),
    }
}

/// Parses and checks a whole `.npy` file; its one tensor is called `name`.
pub fn parse(bytes: &[u8], dtype: Option<DType>, name: &str) -> Result<ParsedFile, FileError> {
    if bytes.len() < 10 || !bytes.starts_with(NPY_MAGIC) {
        return Err(FileError::file(if bytes.starts_with(NPY_MAGIC) || bytes.len() < 6 {
            format!("truncated: {} bytes, shorter than the .npy preamble", bytes.len())
        } else {
            "not a .npy file (bad magic)".to_string()
        }));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as u64, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(FileError::file(format!(
                    "truncated: {} bytes, shorter than the .npy preamble",
                    bytes.len()
                )));
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as u64, 12)
        }
        _ => return Err(FileError::file(format!("unsupported .npy format version {major}.{minor}"))),
    };
    let rest = (bytes.len() - start) as u64;
    if header_len > rest {
        return Err(FileError::file(format!(
            "header length {header_len} runs past the end of the file ({rest} bytes follow the length)"
        )));
    }
    let data_start = start + header_len as usize;
    let text = &bytes[start..data_start];
    let t = |m: String| FileError::tensor(name, m);
    let mut p = LitParser { s: text, pos: 0 };
    let lit = p.value(0).map_err(|e| FileError::file(format!("header: {e}")))?;
    if p.peek().is_some() {
        return Err(FileError::file(format!("header: unexpected bytes after the dict at byte {}", p.pos)));
    }
    let Lit::Dict(items) = lit else { return Err(FileError::file("header is not a dict")) };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (k, v) in items {
        let slot = match &k {
            Lit::Str(s) if s == "descr" => &mut descr,
            Lit::Str(s) if s == "fortran_order" => &mut fortran,
            Lit::Str(s) if s == "shape" => &mut shape,
            other => return Err(FileError::file(format!("header: unexpected key {other:?}"))),
        };
        if slot.replace(v).is_some() {
            return Err(FileError::file(format!("header: duplicate key {k:?}")));
        }
    }
    let (Some(descr), Some(fortran), Some(shape)) = (descr, fortran, shape) else {
        return Err(FileError::file("header lacks one of `descr`, `fortran_order`, `shape`"));
    };
    if !matches!(fortran, Lit::Bool(_)) {
        return Err(FileError::file("header: `fortran_order` is not True or False"));
    }
    let Lit::Tuple(dims) = shape else { return Err(t("`shape` is not a tuple".into())) };
    let shape: Vec<u64> = dims
        .iter()
        .map(|d| if let Lit::Int(i) = d { Some(*i) } else { None })
        .collect::<Option<_>>()
        .ok_or_else(|| t("`shape` holds something other than non-negative integers".into()))?;
    let elements = elements_of(&shape).ok_or_else(|| t(format!("shape {} overflows", shape_string(&shape))))?;
    let data_len = (bytes.len() - data_start) as u64;
    let (descr_text, elem, itemsize) = match &descr {
        Lit::Str(s) => {
            let d = parse_descr(s).map_err(t)?;
            (s.clone(), elem_of(s, &d, dtype).map_err(t)?, d.itemsize)
        }
        // A structured dtype: NumPy defines it, but it holds records, not activations. Its size is not
        // worth computing here: the data is stored verbatim whatever it is.
        Lit::List(_) => {
            if let Some(d) = dtype {
                return Err(t(format!("--dtype {d} does not fit a structured descr")));
            }
            ("structured".to_string(), Elem::Other("structured dtypes are not activations".into()), None)
        }
        _ => return Err(t("`descr` is neither a string nor a list".into())),
    };
    if let Some(size) = itemsize {
        let need = elements.checked_mul(size).ok_or_else(|| t(format!("shape {} overflows", shape_string(&shape))))?;
        if need != data_len {
            return Err(t(format!(
                "shape {} of `{descr_text}` needs {need} bytes, the file has {data_len} after the header",
                shape_string(&shape)
            )));
        }
    }
    Ok(ParsedFile {
        kind: Kind::Npy,
        header: 0..data_start,
        tensors: vec![Tensor {
            name: name.to_string(),
            dtype_name: descr_text,
            elem,
            shape,
            elements,
            range: data_start..bytes.len(),
        }],
    })
}

/// Writes a version 1.0 `.npy` file of `data` with `descr` and `shape` (header padded to 64 bytes as
/// NumPy does). For tests and demos.
pub fn write(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}").into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = NPY_MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_headers() {
        let b = write("<f2", &[2, 3], &[0; 12]);
        // NumPy pads the preamble and header to a multiple of 64 bytes.
        assert_eq!((b.len() - 12) % 64, 0);
        let p = parse(&b, None, "x").unwrap();
        p.check_coverage(b.len()).unwrap();
        assert_eq!(p.tensors[0].elem, Elem::Act(DType::F16));
        assert_eq!(p.tensors[0].shape, [2, 3]);
        let p = parse(&write("<f4", &[3], &[0; 12]), None, "x").unwrap();
        assert_eq!(p.tensors[0].elem, Elem::Act(DType::F32));
        let p = parse(&write("<i8", &[], &[0; 8]), None, "x").unwrap();
        assert!(matches!(p.tensors[0].elem, Elem::Other(_)));
        assert_eq!(p.tensors[0].elements, 1);
        let p = parse(&write("|V2", &[0], &[]), Some(DType::Bf16), "x").unwrap();
        assert_eq!(p.tensors[0].elem, Elem::Act(DType::Bf16));
        let p = parse(&write("|V1", &[5], &[0; 5]), Some(DType::E5m2), "x").unwrap();
        assert_eq!(p.tensors[0].elem, Elem::Act(DType::E5m2));
        let p = parse(&write(">f2", &[1], &[0; 2]), None, "x").unwrap();
        assert!(matches!(&p.tensors[0].elem, Elem::Other(m) if m.contains("big-endian")));
    }

    #[test]
    fn refuses_bad_headers() {
        let e = parse(&write("|V2", &[1], &[0; 2]), None, "x").unwrap_err();
        assert!(e.message.contains("needs --dtype bf16"), "{e}");
        let e = parse(&write("|V2", &[1], &[0; 2]), Some(DType::E4m3), "x").unwrap_err();
        assert!(e.message.contains("2-byte"), "{e}");
        let e = parse(&write("<f2", &[3], &[0; 4]), None, "x").unwrap_err();
        assert_eq!(e.tensor.as_deref(), Some("x"));
        assert!(e.message.contains("needs 6 bytes"), "{e}");
        let e = parse(&write("<q9", &[1], &[0; 2]), None, "x").unwrap_err();
        assert!(e.message.contains("not a NumPy dtype"), "{e}");
        let e = parse(&write("<f2", &[1], &[0; 2]), Some(DType::E4m3), "x").unwrap_err();
        assert!(e.message.contains("does not fit"), "{e}");
        let mut b = write("<f2", &[1], &[0; 2]);
        b[8] = 0xff;
        assert!(parse(&b, None, "x").unwrap_err().message.contains("runs past the end"));
        b[6] = 9;
        assert!(parse(&b, None, "x").unwrap_err().message.contains("version 9"));
        assert!(parse(b"\x93NUMPY", None, "x").unwrap_err().message.contains("truncated"));
        let deep =
            format!("{{'descr': {}1{}, 'fortran_order': False, 'shape': (1,)}}", "[".repeat(100), "]".repeat(100));
        let mut b = NPY_MAGIC.to_vec();
        b.extend_from_slice(&[1, 0]);
        b.extend_from_slice(&(deep.len() as u16).to_le_bytes());
        b.extend_from_slice(deep.as_bytes());
        assert!(parse(&b, None, "x").unwrap_err().message.contains("too deep"));
    }

    /// Python's `(600)` is an integer, not a one-element tuple: NumPy refuses such a header, so do we.
    /// `(600,)` and `()` are tuples.
    #[test]
    fn parenthesised_integer_is_not_a_shape() {
        let header = |shape: &str| {
            let h = format!("{{'descr': '<f2', 'fortran_order': False, 'shape': {shape}, }}");
            let mut b = NPY_MAGIC.to_vec();
            b.extend_from_slice(&[1, 0]);
            b.extend_from_slice(&(h.len() as u16).to_le_bytes());
            b.extend_from_slice(h.as_bytes());
            b.extend_from_slice(&[0u8; 1200]);
            b
        };
        let e = parse(&header("(600)"), None, "x").unwrap_err();
        assert!(e.message.contains("not a tuple"), "{e}");
        assert_eq!(parse(&header("(600,)"), None, "x").unwrap().tensors[0].shape, [600]);
        assert_eq!(parse(&header("(2, 300)"), None, "x").unwrap().tensors[0].shape, [2, 300]);
        // A scalar: shape `()`, one element; the 1,198 bytes left over are then refused.
        assert!(parse(&header("()"), None, "x").is_err());
    }

    #[test]
    fn descr_sizes() {
        assert_eq!(parse_descr("<U5").unwrap().itemsize, Some(20));
        assert_eq!(parse_descr("<M8[ns]").unwrap().itemsize, Some(8));
        assert_eq!(parse_descr("|O").unwrap().itemsize, None);
        assert!(parse_descr("<f3").is_err());
        assert!(parse_descr("").is_err());
    }
}
