//! Line and marker plots for the experiments, rendered to SVG with `plotters`.
//!
//! A [`Figure`] is a title over a grid of [`Panel`]s; a panel has a title, axis labels (with
//! units), a linear or logarithmic scale per axis, a legend, and [`Series`] of points drawn as
//! lines, dashed lines or markers. Text is written as SVG `<text>` elements (no font files are
//! read), so the output is the same on every machine and readable in any browser.
//!
//! Points that cannot be drawn — non-finite values, and non-positive values on a logarithmic
//! axis — are skipped, and a line is broken where they were, never joined across the gap.

use std::io;
use std::path::Path;

use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// plotters failed to draw a figure (its error type is generic over the drawing backend: kept
/// as its message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plotters could not draw the figure: {0}")]
pub struct PlotError(pub String);

impl PlotError {
    fn new(e: impl std::fmt::Display) -> Self {
        PlotError(e.to_string())
    }
}

/// Scale of one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic (non-positive values are not drawn).
    Log,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line through the points.
    Line,
    /// A dashed line (reference slopes, guides).
    Dashed,
    /// A marker at each point, no line.
    Markers,
    /// A solid line with a marker at each point.
    LineMarkers,
}

/// Where a panel's legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegendPosition {
    /// Inside the plot, upper left.
    UpperLeft,
    /// Inside the plot, upper right.
    UpperRight,
    /// Inside the plot, lower left.
    LowerLeft,
    /// Inside the plot, lower right.
    LowerRight,
    /// No legend (e.g. when a neighbouring panel has the same series).
    Hidden,
}

/// A labelled set of points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points `(x, y)` in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Line, dashes or markers.
    pub style: Style,
    /// Index into the palette (so that one method has one colour across panels).
    pub color: usize,
}

impl Series {
    /// A series with the given style and palette colour.
    pub fn new(
        label: impl Into<String>,
        points: Vec<(f64, f64)>,
        style: Style,
        color: usize,
    ) -> Self {
        Self {
            label: label.into(),
            points,
            style,
            color,
        }
    }
}

/// One plot: axes, labels, series.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Title above the plot.
    pub title: String,
    /// Label of the horizontal axis, with units.
    pub x_label: String,
    /// Label of the vertical axis, with units.
    pub y_label: String,
    /// Scale of the horizontal axis.
    pub x_scale: Scale,
    /// Scale of the vertical axis.
    pub y_scale: Scale,
    /// The data.
    pub series: Vec<Series>,
    /// Horizontal range; `None` fits the data.
    pub x_range: Option<(f64, f64)>,
    /// Vertical range; `None` fits the data (on a log axis, at most [`Panel::MAX_DECADES`]
    /// decades below the largest value).
    pub y_range: Option<(f64, f64)>,
    /// Legend placement.
    pub legend: LegendPosition,
}

impl Panel {
    /// A fitted log axis spans at most this many decades below its largest value.
    pub const MAX_DECADES: f64 = 12.0;

    /// An empty panel with linear axes fitted to the data and the legend upper left.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: Vec::new(),
            x_range: None,
            y_range: None,
            legend: LegendPosition::UpperLeft,
        }
    }

    /// Set both scales.
    pub fn scales(mut self, x: Scale, y: Scale) -> Self {
        self.x_scale = x;
        self.y_scale = y;
        self
    }

    /// Set the legend position.
    pub fn legend(mut self, position: LegendPosition) -> Self {
        self.legend = position;
        self
    }

    /// Add a series.
    pub fn with(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    /// Fix the vertical range.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }
}

/// A titled grid of panels.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Title over the whole figure.
    pub title: String,
    /// Panels, filled row by row.
    pub panels: Vec<Panel>,
    /// Panels per row.
    pub columns: usize,
    /// Size of one panel in pixels.
    pub panel_size: (u32, u32),
}

/// Colours (the "tab10" palette): distinguishable, and legible on white.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

const TITLE_HEIGHT: u32 = 40;

impl Figure {
    /// A figure with one row of `columns` panels per row, each `panel_size` pixels.
    pub fn new(title: impl Into<String>, columns: usize, panel_size: (u32, u32)) -> Self {
        Self {
            title: title.into(),
            panels: Vec::new(),
            columns: columns.max(1),
            panel_size,
        }
    }

    /// Add a panel.
    pub fn with(mut self, panel: Panel) -> Self {
        self.panels.push(panel);
        self
    }

    /// Size of the whole figure in pixels.
    pub fn size(&self) -> (u32, u32) {
        let columns = self.columns.min(self.panels.len()).max(1);
        let rows = self.panels.len().div_ceil(self.columns).max(1);
        (
            self.panel_size.0 * columns as u32,
            TITLE_HEIGHT + self.panel_size.1 * rows as u32,
        )
    }

    /// The figure as an SVG document.
    ///
    /// # Errors
    /// [`PlotError`] if plotters fails to draw (it does not for finite ranges).
    pub fn to_svg(&self) -> Result<String, PlotError> {
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, self.size()).into_drawing_area();
            root.fill(&WHITE).map_err(PlotError::new)?;
            let body = root
                .titled(&self.title, ("sans-serif", 22).into_font().color(&BLACK))
                .map_err(PlotError::new)?;
            let columns = self.columns.min(self.panels.len()).max(1);
            let rows = self.panels.len().div_ceil(self.columns).max(1);
            let areas = body.split_evenly((rows, columns));
            for (panel, area) in self.panels.iter().zip(areas.iter()) {
                draw_panel(area, panel)?;
            }
            root.present().map_err(PlotError::new)?;
        }
        Ok(buf)
    }

    /// Write the figure as SVG to `path` (through `path.tmp`, renamed when complete).
    ///
    /// # Errors
    /// Drawing or I/O failures.
    pub fn write_svg(&self, path: &Path) -> io::Result<()> {
        let svg = self.to_svg().map_err(io::Error::other)?;
        super::write_atomic(path, svg.as_bytes())
    }
}

fn valid(v: f64, scale: Scale) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// Range of the values `vals` on `scale` (with a margin), or the explicit `fixed` one.
pub fn fit_range(
    vals: impl Iterator<Item = f64>,
    scale: Scale,
    fixed: Option<(f64, f64)>,
) -> (f64, f64) {
    if let Some(r) = fixed {
        return r;
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|&v| valid(v, scale)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    match scale {
        Scale::Linear => {
            if !lo.is_finite() {
                return (0.0, 1.0);
            }
            if hi - lo <= 1e-300_f64.max(1e-12 * hi.abs().max(lo.abs())) {
                let d = if lo == 0.0 { 1.0 } else { 0.1 * lo.abs() };
                return (lo - d, hi + d);
            }
            let pad = 0.04 * (hi - lo);
            (lo - pad, hi + pad)
        }
        Scale::Log => {
            if !lo.is_finite() {
                return (1e-3, 1.0);
            }
            let top = hi.log10().ceil();
            let bottom = lo.log10().floor().max(top - Panel::MAX_DECADES);
            let bottom = if bottom >= top { top - 1.0 } else { bottom };
            (10f64.powf(bottom), 10f64.powf(top))
        }
    }
}

/// Tick label: plain decimals for moderate magnitudes, `1e-5` style otherwise.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.1e}");
        // "1.0e-5" → "1e-5"
        s.replace(".0e", "e")
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

/// A tick label; on a log axis only 1, 2 and 5 times a power of ten are labelled (the other
/// ticks keep their grid lines), so that labels never crowd.
pub fn axis_label(v: f64, log: bool) -> String {
    if log && v > 0.0 {
        let mantissa = v / 10f64.powf(v.log10().floor());
        let m = mantissa.round();
        if (mantissa - m).abs() > 1e-6 * m || !(m == 1.0 || m == 2.0 || m == 5.0 || m == 10.0) {
            return String::new();
        }
    }
    tick_label(v)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
) -> Result<(), PlotError> {
    let xs = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = panel.series.iter().flat_map(|s| {
        s.points
            .iter()
            .filter(|p| valid(p.0, panel.x_scale))
            .map(|p| p.1)
    });
    // On a log axis, widen by a hair so that a bound on an exact power of ten (whose logarithm
    // may round up) still gets its tick.
    let widen = |(lo, hi): (f64, f64), scale| match scale {
        Scale::Log => (lo * (1.0 - 1e-9), hi * (1.0 + 1e-9)),
        Scale::Linear => (lo, hi),
    };
    let (x0, x1) = widen(fit_range(xs, panel.x_scale, panel.x_range), panel.x_scale);
    let (y0, y1) = widen(fit_range(ys, panel.y_scale, panel.y_range), panel.y_scale);
    match (panel.x_scale, panel.y_scale) {
        (Scale::Linear, Scale::Linear) => draw_in(
            area,
            panel,
            RangedCoordf64::from(x0..x1),
            RangedCoordf64::from(y0..y1),
        ),
        (Scale::Linear, Scale::Log) => draw_in(
            area,
            panel,
            RangedCoordf64::from(x0..x1),
            LogCoord::from((y0..y1).log_scale()),
        ),
        (Scale::Log, Scale::Linear) => draw_in(
            area,
            panel,
            LogCoord::from((x0..x1).log_scale()),
            RangedCoordf64::from(y0..y1),
        ),
        (Scale::Log, Scale::Log) => draw_in(
            area,
            panel,
            LogCoord::from((x0..x1).log_scale()),
            LogCoord::from((y0..y1).log_scale()),
        ),
    }
}

/// Maximal runs of consecutive drawable points inside the ranges.
pub fn segments(
    points: &[(f64, f64)],
    panel: &Panel,
    xr: (f64, f64),
    yr: (f64, f64),
) -> Vec<Vec<(f64, f64)>> {
    let inside = |v: f64, r: (f64, f64)| {
        let (lo, hi) = (r.0.min(r.1), r.0.max(r.1));
        v >= lo * (1.0 - 1e-12 * lo.signum()) && v <= hi * (1.0 + 1e-12 * hi.signum())
    };
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur = Vec::new();
    for &(x, y) in points {
        let ok =
            valid(x, panel.x_scale) && valid(y, panel.y_scale) && inside(x, xr) && inside(y, yr);
        if ok {
            cur.push((x, y));
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn draw_in<DB: DrawingBackend, X, Y>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    x: X,
    y: Y,
) -> Result<(), PlotError>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let (x_log, y_log) = (panel.x_scale == Scale::Log, panel.y_scale == Scale::Log);
    let xr = (x.range().start, x.range().end);
    let yr = (y.range().start, y.range().end);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 17).into_font())
        .margin(12)
        .margin_right(28)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(PlotError::new)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .x_label_formatter(&|v| axis_label(*v, x_log))
        .y_label_formatter(&|v| axis_label(*v, y_log))
        .light_line_style(BLACK.mix(0.05))
        .bold_line_style(BLACK.mix(0.15))
        .draw()
        .map_err(PlotError::new)?;

    let mut any_label = false;
    for s in &panel.series {
        let color = PALETTE[s.color % PALETTE.len()];
        let line = color.stroke_width(2);
        let segs = segments(&s.points, panel, xr, yr);
        let mut labelled = false;
        for seg in &segs {
            let anno = match s.style {
                Style::Line => chart.draw_series(LineSeries::new(seg.iter().copied(), line)),
                Style::Dashed => {
                    chart.draw_series(DashedLineSeries::new(seg.iter().copied(), 8, 5, line))
                }
                Style::Markers => {
                    chart.draw_series(seg.iter().map(|&p| Circle::new(p, 4, color.filled())))
                }
                Style::LineMarkers => {
                    chart
                        .draw_series(LineSeries::new(seg.iter().copied(), line))
                        .map_err(PlotError::new)?;
                    chart.draw_series(seg.iter().map(|&p| Circle::new(p, 4, color.filled())))
                }
            }
            .map_err(PlotError::new)?;
            if !labelled && !s.label.is_empty() {
                labelled = true;
                any_label = true;
                let style = s.style;
                anno.label(s.label.as_str()).legend(move |(lx, ly)| {
                    let p = legend_parts(style, color);
                    EmptyElement::at((lx, ly))
                        + PathElement::new(p.first, p.line)
                        + PathElement::new(p.second, p.line)
                        + Circle::new((11, 0), p.radius, p.marker)
                });
            }
        }
    }
    if any_label && panel.legend != LegendPosition::Hidden {
        let pos = match panel.legend {
            LegendPosition::UpperLeft => SeriesLabelPosition::UpperLeft,
            LegendPosition::UpperRight => SeriesLabelPosition::UpperRight,
            LegendPosition::LowerLeft => SeriesLabelPosition::LowerLeft,
            LegendPosition::LowerRight | LegendPosition::Hidden => SeriesLabelPosition::LowerRight,
        };
        chart
            .configure_series_labels()
            .position(pos)
            .label_font(("sans-serif", 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(PlotError::new)?;
    }
    Ok(())
}

/// The legend's sample of a series: two line pieces and a marker, the unused ones invisible
/// (one element type for every style, as `SeriesAnno::legend` needs).
struct LegendParts {
    first: Vec<(i32, i32)>,
    second: Vec<(i32, i32)>,
    line: ShapeStyle,
    radius: u32,
    marker: ShapeStyle,
}

fn legend_parts(style: Style, color: RGBColor) -> LegendParts {
    let line = color.stroke_width(2);
    let hidden = color.mix(0.0).stroke_width(0);
    let (first, second) = match style {
        Style::Dashed => (vec![(0, 0), (8, 0)], vec![(13, 0), (21, 0)]),
        Style::Markers => (vec![(0, 0), (0, 0)], vec![(0, 0), (0, 0)]),
        Style::Line | Style::LineMarkers => (vec![(0, 0), (11, 0)], vec![(11, 0), (22, 0)]),
    };
    let has_marker = matches!(style, Style::Markers | Style::LineMarkers);
    LegendParts {
        first,
        second,
        line: if style == Style::Markers {
            hidden
        } else {
            line
        },
        radius: if has_marker { 4 } else { 0 },
        marker: if has_marker { color.filled() } else { hidden },
    }
}
