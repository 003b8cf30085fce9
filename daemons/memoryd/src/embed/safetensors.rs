//! The weights file, read by hand: the safetensors format is an 8-byte little-endian
//! header length, a JSON header giving each tensor's dtype, shape and byte range
//! (`data_offsets`, from the end of the header), then the raw little-endian data. A file
//! on disk is outside input, so every number the header states is checked against the
//! bytes there are before it is used, and each refusal names the tensor and what was wrong.
//!
//! Only float32 tensors are decoded (the encoder runs nothing else); tensors of the other
//! dtypes the format defines are checked the same way and left out, as `position_ids`'
//! int64 row in all-MiniLM-L6-v2 is.

use super::bert::Weights;
use std::fmt;

/// The largest JSON header read. all-MiniLM-L6-v2's is 11 kB for its 101 tensors (about
/// a hundred bytes a tensor); a megabyte is room for ten thousand, far beyond any
/// sentence encoder, and stops a stated length of exabytes from being believed.
pub const MAX_HEADER_BYTES: u64 = 1024 * 1024;

/// The largest tensor decoded, in bytes. The biggest in all-MiniLM-L6-v2 is the word
/// embeddings, 30 522 × 384 float32s (47 MB); a tensor is copied out of the file, so
/// this bounds one allocation whatever a shape says.
pub const MAX_TENSOR_BYTES: u64 = 256 * 1024 * 1024;

/// Dimensions a tensor may have. A BERT's have at most two; a few more leaves room for
/// what a converter writes, and a shape of thousands of dimensions is refused before its
/// product is taken.
pub const MAX_RANK: usize = 8;

/// Why a weights file was refused. The text is lower case and names the tensor.
#[derive(Debug, PartialEq)]
pub enum FormatError {
    /// Fewer than the 8 bytes of the header's length.
    Short { len: usize },
    /// The stated header length is over `MAX_HEADER_BYTES`.
    HeaderTooLong { stated: u64 },
    /// The stated header runs past the end of the file.
    HeaderPastEnd { stated: u64, file: usize },
    /// The header is not a JSON object of tensors.
    Header { why: String },
    /// One tensor's entry is wrong.
    Tensor { name: String, why: String },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Short { len } => write!(
                f,
                "a safetensors file of {len} bytes, shorter than its 8-byte header length"
            ),
            FormatError::HeaderTooLong { stated } => write!(
                f,
                "a safetensors header of {stated} bytes, more than the {MAX_HEADER_BYTES} allowed"
            ),
            FormatError::HeaderPastEnd { stated, file } => write!(
                f,
                "a safetensors header of {stated} bytes in a file of {file} bytes: the file is cut short"
            ),
            FormatError::Header { why } => write!(f, "the safetensors header: {why}"),
            FormatError::Tensor { name, why } => write!(f, "tensor {name:?}: {why}"),
        }
    }
}

impl std::error::Error for FormatError {}

/// One tensor's entry in the header.
#[derive(serde::Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// The key the format keeps for free-form metadata (string to string), not a tensor.
const METADATA: &str = "__metadata__";

/// Bytes per element of each dtype the format defines; `None` for any other name.
fn element_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" => 1,
        "U16" | "I16" | "F16" | "BF16" => 2,
        "U32" | "I32" | "F32" => 4,
        "U64" | "I64" | "F64" => 8,
        _ => return None,
    })
}

/// The float32 tensors of a safetensors file held in `bytes`, by name, each with its
/// shape and its values in order.
pub fn read(bytes: &[u8]) -> Result<Weights, FormatError> {
    let (len_bytes, rest) = bytes
        .split_first_chunk::<8>()
        .ok_or(FormatError::Short { len: bytes.len() })?;
    let stated = u64::from_le_bytes(*len_bytes);
    if stated > MAX_HEADER_BYTES {
        return Err(FormatError::HeaderTooLong { stated });
    }
    // Below MAX_HEADER_BYTES, so it fits a usize.
    let header_len = stated as usize;
    if header_len > rest.len() {
        return Err(FormatError::HeaderPastEnd {
            stated,
            file: bytes.len(),
        });
    }
    let (header, data) = rest.split_at(header_len);
    let entries: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| FormatError::Header { why: e.to_string() })?;

    // (start, end, name) of every tensor, to refuse overlaps: without that check a small
    // file could name the same large range many times and be decoded into far more
    // memory than it holds.
    let mut ranges: Vec<(u64, u64, &str)> = Vec::with_capacity(entries.len());
    let mut wanted: Vec<(&str, Vec<usize>, u64, u64)> = Vec::new();
    for (name, value) in &entries {
        if name == METADATA {
            continue;
        }
        let bad = |why: String| FormatError::Tensor {
            name: name.clone(),
            why,
        };
        let entry = <Entry as serde::Deserialize>::deserialize(value)
            .map_err(|e| bad(format!("not a dtype, shape and data_offsets entry: {e}")))?;
        let size = element_bytes(&entry.dtype).ok_or_else(|| {
            bad(format!(
                "dtype {:?} is not one safetensors defines",
                entry.dtype
            ))
        })?;
        if entry.shape.len() > MAX_RANK {
            return Err(bad(format!(
                "{} dimensions, more than the {MAX_RANK} allowed",
                entry.shape.len()
            )));
        }
        let need = entry
            .shape
            .iter()
            .try_fold(size, |n, d| n.checked_mul(*d))
            .filter(|n| *n <= MAX_TENSOR_BYTES)
            .ok_or_else(|| {
                bad(format!(
                    "shape {:?} of {} is more than the {MAX_TENSOR_BYTES} bytes allowed",
                    entry.shape, entry.dtype
                ))
            })?;
        let [start, end] = entry.data_offsets;
        if start > end || end > data.len() as u64 {
            return Err(bad(format!(
                "bytes {start}..{end} are not inside the {} bytes of data",
                data.len()
            )));
        }
        if end - start != need {
            return Err(bad(format!(
                "bytes {start}..{end} hold {}, but shape {:?} of {} needs {need}",
                end - start,
                entry.shape,
                entry.dtype
            )));
        }
        ranges.push((start, end, name));
        if entry.dtype == "F32" {
            // Each dimension is at most the tensor's byte count, which fits a usize.
            let dims = entry.shape.iter().map(|d| *d as usize).collect();
            wanted.push((name, dims, start, end));
        }
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((_, end, before), (start, _, after)) = (pair[0], pair[1]);
        if start < end {
            return Err(FormatError::Tensor {
                name: after.to_string(),
                why: format!("its bytes overlap tensor {before:?}'s"),
            });
        }
    }

    let mut weights = Weights::with_capacity(wanted.len());
    for (name, dims, start, end) in wanted {
        // Inside `data`, checked above.
        let raw = &data[start as usize..end as usize];
        let values = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        weights.insert(name.to_string(), (dims, values));
    }
    Ok(weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file of `tensors` (name, dtype, shape, data), written as the format
    /// says, with `header` edited by `edit` first so a test can break one thing.
    fn file(
        tensors: &[(&str, &str, &[u64], &[u8])],
        edit: impl FnOnce(&mut serde_json::Value),
    ) -> Vec<u8> {
        let mut header = serde_json::json!({ "__metadata__": { "format": "pt" } });
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            header[*name] = serde_json::json!({
                "dtype": dtype,
                "shape": shape,
                "data_offsets": [data.len(), data.len() + bytes.len()],
            });
            data.extend_from_slice(bytes);
        }
        edit(&mut header);
        let header = serde_json::to_vec(&header).expect("json");
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&header);
        out.extend_from_slice(&data);
        out
    }

    fn floats(xs: &[f32]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn refusal(bytes: &[u8]) -> String {
        read(bytes).expect_err("refused").to_string()
    }

    #[test]
    fn float_tensors_are_read_with_their_shapes_and_others_left_out() {
        let w = floats(&[1.0, -2.5, 3.25, f32::MIN_POSITIVE, 0.0, -0.0]);
        let ids: Vec<u8> = (0..4u64).flat_map(|i| i.to_le_bytes()).collect();
        let bytes = file(
            &[
                ("ids", "I64", &[1, 4], &ids),
                ("w", "F32", &[2, 3], &w),
                ("scalar", "F32", &[], &floats(&[7.0])),
            ],
            |_| {},
        );
        let got = read(&bytes).expect("read");
        assert_eq!(got.len(), 2, "the int64 tensor is left out");
        let (dims, values) = &got["w"];
        assert_eq!(dims, &[2, 3]);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(values),
            bits(&[1.0, -2.5, 3.25, f32::MIN_POSITIVE, 0.0, -0.0])
        );
        assert_eq!(got["scalar"], (vec![], vec![7.0]));
    }

    #[test]
    fn a_corrupt_or_hostile_file_is_refused_saying_what_is_wrong() {
        let w = floats(&[1.0, 2.0, 3.0, 4.0]);
        let good = file(&[("w", "F32", &[2, 2], &w)], |_| {});
        assert!(read(&good).is_ok());

        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", Vec::new(), "shorter than its 8-byte header length"),
            (
                "a header length of exabytes",
                u64::MAX.to_le_bytes().to_vec(),
                "more than the 1048576 allowed",
            ),
            (
                "cut inside the header",
                good[..20].to_vec(),
                "the file is cut short",
            ),
            (
                "not JSON",
                [&3u64.to_le_bytes()[..], b"{{{"].concat(),
                "the safetensors header",
            ),
            (
                "a header that is a list",
                [&2u64.to_le_bytes()[..], b"[]"].concat(),
                "the safetensors header",
            ),
            (
                "cut inside the data",
                good[..good.len() - 1].to_vec(),
                "are not inside the 15 bytes of data",
            ),
            (
                "an unknown dtype",
                file(&[("w", "F31", &[2, 2], &w)], |_| {}),
                "dtype \"F31\" is not one safetensors defines",
            ),
            (
                "a shape the bytes do not fill",
                file(&[("w", "F32", &[2, 3], &w)], |_| {}),
                "hold 16, but shape [2, 3] of F32 needs 24",
            ),
            (
                "a shape whose size overflows",
                file(&[("w", "F32", &[u64::MAX, 2], &w)], |_| {}),
                "is more than the 268435456 bytes allowed",
            ),
            (
                "a shape past the tensor limit",
                file(&[("w", "F32", &[1 << 20, 1 << 7], &w)], |_| {}),
                "is more than the 268435456 bytes allowed",
            ),
            (
                "too many dimensions",
                file(&[("w", "F32", &[1; 9], &w)], |_| {}),
                "9 dimensions, more than the 8 allowed",
            ),
            (
                "offsets backwards",
                file(&[("w", "F32", &[2, 2], &w)], |h| {
                    h["w"]["data_offsets"] = serde_json::json!([16, 0]);
                }),
                "bytes 16..0 are not inside",
            ),
            (
                "offsets that are not numbers",
                file(&[("w", "F32", &[2, 2], &w)], |h| {
                    h["w"]["data_offsets"] = serde_json::json!(["0", "16"]);
                }),
                "not a dtype, shape and data_offsets entry",
            ),
            (
                "two tensors on the same bytes",
                file(&[("a", "F32", &[2, 2], &w), ("b", "F32", &[1], &[])], |h| {
                    h["b"]["data_offsets"] = serde_json::json!([4, 8]);
                }),
                "tensor \"b\": its bytes overlap tensor \"a\"'s",
            ),
        ];
        for (what, bytes, want) in cases {
            let got = refusal(&bytes);
            assert!(got.contains(want), "{what}: {got}");
            assert!(
                got.starts_with(char::is_lowercase),
                "{what}: lower case: {got}"
            );
        }
    }
}
