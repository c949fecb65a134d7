//! Attribute types of the ops added for the ONNX node suite (issue #16 item 4): indexing
//! and scatter ops, signal processing, sampling, and the ops whose output size depends on
//! their input data (created by the importer only when that data is constant).

use serde::{Deserialize, Serialize};

/// ScatterElements / ScatterND `reduction`: how an update combines with the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScatterReduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

impl ScatterReduction {
    /// The ONNX attribute value.
    pub fn name(self) -> &'static str {
        match self {
            ScatterReduction::None => "none",
            ScatterReduction::Add => "add",
            ScatterReduction::Mul => "mul",
            ScatterReduction::Max => "max",
            ScatterReduction::Min => "min",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => ScatterReduction::None,
            "add" => ScatterReduction::Add,
            "mul" => ScatterReduction::Mul,
            "max" => ScatterReduction::Max,
            "min" => ScatterReduction::Min,
            _ => return None,
        })
    }
}

/// GridSample interpolation (ONNX `mode`, opset 20 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GridMode {
    Linear,
    Nearest,
    Cubic,
}

/// GridSample `padding_mode`: what a sample outside the input reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GridPadding {
    Zeros,
    Border,
    Reflection,
}

/// RoiAlign attributes (output size, sampling grid per bin, pooling).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoiAlignAttrs {
    /// Max pooling of the bin's samples instead of their average.
    pub max: bool,
    pub output_height: usize,
    pub output_width: usize,
    /// Samples per bin along each axis; 0 = ceil(bin size), as ONNX specifies.
    pub sampling_ratio: usize,
    pub spatial_scale: f32,
    /// `coordinate_transformation_mode` half_pixel (shift by -0.5) vs output_half_pixel.
    pub half_pixel: bool,
}

/// Col2Im geometry (the image and block shapes are folded operands).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Col2ImAttrs {
    pub image_shape: Vec<usize>,
    pub block_shape: Vec<usize>,
    pub dilations: Vec<usize>,
    /// ONNX order: all begins then all ends.
    pub pads: Vec<usize>,
    pub strides: Vec<usize>,
}

/// TfIdfVectorizer weighting (`mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TfIdfMode {
    Tf,
    Idf,
    TfIdf,
}

/// TfIdfVectorizer over integer tokens: the n-gram pool (ONNX `pool_int64s`, grouped by
/// n through `ngram_counts`), each n-gram's output column (`ngram_indexes`) and the
/// optional per-column `weights`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TfIdfAttrs {
    pub mode: TfIdfMode,
    pub min_gram_length: usize,
    pub max_gram_length: usize,
    pub max_skip_count: usize,
    pub ngram_counts: Vec<usize>,
    pub ngram_indexes: Vec<usize>,
    pub pool: Vec<i64>,
    pub weights: Vec<f32>,
}

impl TfIdfAttrs {
    /// Number of output columns (the largest n-gram index + 1).
    pub fn output_size(&self) -> usize {
        self.ngram_indexes.iter().max().map_or(0, |&m| m + 1)
    }
}
