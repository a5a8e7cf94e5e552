//! The two SVG plots of a run, drawn with plotters at the largest size measured (the headline shape on a
//! GPU): throughput against density per op, and compression ratio against density beside the entropy
//! bound's ratio.

use plotters::prelude::*;

use bitsparse::error::{Error, Result};
use bitsparse::format::{entropy_bound_bits, DType};

use super::op::Op;
use super::report::{human, BenchReport, Row};

const SIZE: (u32, u32) = (1200, 640);

/// Tableau 10: distinct at a glance, unlike a generated palette's pale yellows.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// The densities measured, for the x axis's labels.
fn key_points(rows: &[&Row]) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().map(|r| r.density).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v.dedup();
    v
}

fn density_label(x: &f64) -> String {
    format!("{}", (x * 1000.0).round() / 1000.0)
}

fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::Io(std::io::Error::other(format!("plotting: {e}")))
}

/// Rows at the largest element count, and that count.
fn headline(report: &BenchReport) -> (u64, Vec<&Row>) {
    let n = report.rows.iter().map(|r| r.elements).max().unwrap_or(0);
    (n, report.rows.iter().filter(|r| r.elements == n && r.density > 0.0).collect())
}

/// One line of a plot.
#[derive(Clone, Debug)]
struct Series {
    label: String,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
    /// Dashed (FP8 rows; entropy-bound curves).
    dashed: bool,
    /// Thin line, hollow markers (sign-packed rows; bound curves).
    thin: bool,
    /// Dots at the measured points (not on computed curves).
    markers: bool,
}

/// Rows grouped into series by op, dtype and sign mode, points sorted by density. Style: colour by op,
/// dashed for 8-bit dtypes, thin with hollow dots for sign packing.
fn series(rows: &[&Row], y: impl Fn(&Row) -> Option<f64>, color_of: impl Fn(&Row) -> RGBColor) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in rows {
        let Some(v) = y(r).filter(|v| v.is_finite() && *v > 0.0) else { continue };
        let label = if r.op.uses_sign_pack() {
            format!("{} {}{}", r.op, r.dtype, if r.sign_pack { " sign-packed" } else { "" })
        } else {
            format!("{} {}", r.op, r.dtype)
        };
        match out.iter_mut().find(|s| s.label == label) {
            Some(s) => s.pts.push((r.density, v)),
            None => out.push(Series {
                label,
                pts: vec![(r.density, v)],
                color: color_of(r),
                dashed: DType::from_name(&r.dtype).is_some_and(|d| d.bits() == 8),
                thin: r.sign_pack,
                markers: true,
            }),
        }
    }
    for s in &mut out {
        s.pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn op_color(r: &Row) -> RGBColor {
    color(Op::ALL.iter().position(|&o| o == r.op).unwrap_or(0))
}

fn x_range(rows: &[&Row]) -> std::ops::Range<f64> {
    let lo = rows.iter().map(|r| r.density).fold(f64::INFINITY, f64::min);
    let hi = rows.iter().map(|r| r.density).fold(0.0, f64::max);
    if lo.is_finite() && hi > 0.0 {
        lo * 0.8..hi * 1.25
    } else {
        0.005..0.6
    }
}

fn empty_svg(title: &str) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        root.draw(&Text::new(format!("{title}: no rows"), (40, 40), ("sans-serif", 20))).map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Width of the legend panel right of the chart.
const LEGEND_W: u32 = 290;

type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

/// The legend, drawn in its own panel so it never hides a line.
fn draw_legend(area: &Area<'_>, data: &[Series]) -> Result<()> {
    for (i, s) in data.iter().enumerate() {
        let y = 60 + 22 * i as i32;
        let style = s.color.stroke_width(if s.thin { 1 } else { 2 });
        if s.dashed {
            area.draw(&plotters::element::DashedPathElement::new(vec![(8, y), (44, y)], 6, 4, style))
                .map_err(plot_err)?;
        } else {
            area.draw(&PathElement::new(vec![(8, y), (44, y)], style)).map_err(plot_err)?;
        }
        if s.markers {
            let dot = if s.thin { s.color.stroke_width(1) } else { s.color.filled() };
            area.draw(&Circle::new((26, y), 3, dot)).map_err(plot_err)?;
        }
        area.draw(&Text::new(s.label.clone(), (52, y - 7), ("sans-serif", 14))).map_err(plot_err)?;
    }
    Ok(())
}

/// Draws each series: its line (solid or dashed) and its dots.
fn draw_series<X, Y>(chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>, data: &[Series]) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for s in data {
        let style = s.color.stroke_width(if s.thin { 1 } else { 2 });
        if s.dashed {
            chart.draw_series(DashedLineSeries::new(s.pts.iter().copied(), 6, 4, style)).map_err(plot_err)?;
        } else {
            chart.draw_series(LineSeries::new(s.pts.iter().copied(), style)).map_err(plot_err)?;
        }
        if s.markers {
            let dot = if s.thin { s.color.stroke_width(1) } else { s.color.filled() };
            chart.draw_series(s.pts.iter().map(|&p| Circle::new(p, 3, dot))).map_err(plot_err)?;
        }
    }
    Ok(())
}

/// Throughput (GB/s of the bytes that must move) against density, one line per op, dtype and sign mode.
pub fn throughput_svg(report: &BenchReport) -> Result<String> {
    let (n, rows) = headline(report);
    let data = series(&rows, |r| Some(r.gbps), op_color);
    if data.is_empty() {
        return empty_svg("throughput");
    }
    let ymax = data.iter().flat_map(|s| s.pts.iter().map(|q| q.1)).fold(0.0, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (left, right) = root.split_horizontally(SIZE.0 - LEGEND_W);
        let caption =
            format!("{} ({}): throughput at {n} ({}) elements", report.adapter.name, report.adapter.backend, human(n));
        let mut chart = ChartBuilder::on(&left)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range(&rows).log_scale().with_key_points(key_points(&rows)), 0.0..ymax)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&density_label)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .x_desc("density (nonzeros / elements)")
            .y_desc("GB/s (bytes that must move)")
            .draw()
            .map_err(plot_err)?;
        draw_series(&mut chart, &data)?;
        draw_legend(&right, &data)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Compression ratio against density for each dtype and sign mode, with the entropy bound's ratio
/// (element bits ÷ bound bits) drawn dashed in the same colour.
pub fn ratio_svg(report: &BenchReport) -> Result<String> {
    let (n, rows) = headline(report);
    let rows: Vec<&Row> = rows.into_iter().filter(|r| r.op == Op::Compress).collect();
    // One colour per (dtype, sign mode), shared by the measured line and its bound.
    let mut pairs: Vec<(String, bool)> = rows.iter().map(|r| (r.dtype.clone(), r.sign_pack)).collect();
    pairs.sort();
    pairs.dedup();
    let pair_color = |dt: &str, sp: bool| color(pairs.iter().position(|(d, s)| d == dt && *s == sp).unwrap_or(0));
    let mut data = series(&rows, |r| r.ratio, |r| pair_color(&r.dtype, r.sign_pack));
    for s in &mut data {
        s.dashed = false;
        s.thin = false;
    }
    if data.is_empty() {
        return empty_svg("ratio");
    }
    let xr = x_range(&rows);
    for (dt, sp) in &pairs {
        let Some(dtype) = DType::from_name(dt) else { continue };
        let steps = 60;
        let (lo, hi) = (xr.start.ln(), xr.end.ln());
        let pts = (0..=steps)
            .map(|i| (lo + (hi - lo) * i as f64 / steps as f64).exp())
            .map(|d| (d, dtype.bits() as f64 / entropy_bound_bits(d, dtype, *sp)))
            .collect();
        let label = format!("entropy bound {dt}{}", if *sp { " sign-packed" } else { "" });
        data.push(Series { label, pts, color: pair_color(dt, *sp), dashed: true, thin: true, markers: false });
    }
    let (ymin, ymax) = data
        .iter()
        .flat_map(|s| s.pts.iter().map(|q| q.1))
        .fold((f64::INFINITY, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (left, right) = root.split_horizontally(SIZE.0 - LEGEND_W);
        let caption = format!(
            "{} ({}): compression ratio at {n} ({}) elements",
            report.adapter.name,
            report.adapter.backend,
            human(n)
        );
        let (lo, hi) = (ymin * 0.8, ymax * 1.25);
        let ticks = [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 70.0, 100.0, 150.0, 200.0];
        let y_axis =
            (lo..hi).log_scale().with_key_points(ticks.into_iter().filter(|t| (lo..=hi).contains(t)).collect());
        let mut chart = ChartBuilder::on(&left)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(xr.log_scale().with_key_points(key_points(&rows)), y_axis)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&density_label)
            .y_label_formatter(&|y| format!("{y}"))
            .x_desc("density (nonzeros / elements)")
            .y_desc("dense bytes / stored bytes")
            .draw()
            .map_err(plot_err)?;
        draw_series(&mut chart, &data)?;
        draw_legend(&right, &data)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::AdapterReport;

    fn row(op: Op, sign_pack: bool, density: f64, elements: u64, gbps: f64, ratio: Option<f64>) -> Row {
        Row {
            op,
            dtype: "bf16".into(),
            sign_pack,
            density,
            measured_density: density,
            elements,
            reps: 5,
            ms: 1.0,
            gbps,
            copy_fraction: 0.5,
            ratio,
            bound_fraction: ratio.map(|_| 0.9),
            tile_order: None,
            with_a: None,
            format_version: None,
        }
    }

    #[test]
    fn plots_show_the_largest_size_and_the_bound() {
        let mut rows = Vec::new();
        for d in [0.5, 0.176, 0.01] {
            rows.push(row(Op::Copy, false, d, 1 << 20, 100.0, None));
            rows.push(row(Op::Compress, false, d, 1 << 20, 60.0, Some(2.0 / d.sqrt())));
            rows.push(row(Op::Compress, true, d, 1 << 20, 50.0, Some(2.1 / d.sqrt())));
            rows.push(row(Op::Compress, false, d, 1 << 10, 1.0, Some(1.5)));
        }
        let report = BenchReport {
            adapter: AdapterReport { name: "Test GPU".into(), backend: "vulkan".into(), driver: "t".into() },
            copy_gbps: 100.0,
            rows,
            notes: vec![],
            context: vec![],
        };
        let t = throughput_svg(&report).unwrap();
        assert!(t.starts_with("<svg") && t.contains("1048576 (1Mi) elements") && !t.contains("1024 (1Ki)"));
        assert!(t.contains("compress bf16 sign-packed") && t.contains("copy bf16"));
        let r = ratio_svg(&report).unwrap();
        assert!(r.contains("entropy bound bf16 sign-packed") && r.contains("compress bf16"));
        let empty = BenchReport { rows: vec![], ..report };
        assert!(ratio_svg(&empty).unwrap().contains("no rows"));
    }
}
