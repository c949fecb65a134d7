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
