//! The experiments' figures (`zs_systems::experiments::plot`): SVG text, log axes, fitted ranges,
//! atomic writes.

use zs_systems::experiments::plot::*;

fn sample_figure() -> Figure {
    let pts: Vec<(f64, f64)> = (1..=50)
        .map(|i| (i as f64, 1e-4 * (i as f64).powi(2)))
        .collect();
    Figure::new("Test figure & title", 2, (400, 300))
        .with(
            Panel::new("log panel", "step h", "error |Δθ| (rad)")
                .scales(Scale::Log, Scale::Log)
                .with(Series::new("method A", pts.clone(), Style::LineMarkers, 0))
                .with(Series::new("slope 2", pts.clone(), Style::Dashed, 7)),
        )
        .with(
            Panel::new("linear panel", "time t", "ω²‖g‖").with(Series::new(
                "method B",
                pts,
                Style::Line,
                1,
            )),
        )
}

#[test]
fn svg_contains_title_axis_labels_and_legend_as_text() {
    let svg = sample_figure().to_svg().unwrap();
    assert!(svg.starts_with("<svg"), "not an SVG document");
    // Text is emitted as <text> elements and XML-escaped.
    for needle in [
        "Test figure &amp; title",
        "log panel",
        "linear panel",
        "step h",
        "error |Δθ| (rad)",
        "time t",
        "ω²‖g‖",
        "method A",
        "method B",
        "slope 2",
    ] {
        assert!(svg.contains(needle), "missing text {needle:?}");
    }
    assert!(
        svg.matches("<text").count() > 20,
        "too few text elements (ticks missing)"
    );
    assert!(svg.contains("<polyline"), "no lines drawn");
    assert!(svg.contains("<circle"), "no markers drawn");
    assert_eq!(sample_figure().size(), (800, 340));
}

#[test]
fn log_axis_skips_nonpositive_points_and_breaks_lines() {
    let panel = Panel::new("p", "x", "y")
        .scales(Scale::Linear, Scale::Log)
        .with(Series::new(
            "s",
            vec![
                (0.0, 1.0),
                (0.5, 1.5),
                (1.0, 2.0),
                (2.0, 0.0),
                (3.0, f64::NAN),
                (4.0, 3.0),
                (4.5, 3.5),
                (5.0, 4.0),
            ],
            Style::Line,
            0,
        ));
    let segs = segments(&panel.series[0].points, &panel, (0.0, 5.0), (0.1, 10.0));
    assert_eq!(
        segs,
        vec![
            vec![(0.0, 1.0), (0.5, 1.5), (1.0, 2.0)],
            vec![(4.0, 3.0), (4.5, 3.5), (5.0, 4.0)]
        ]
    );
    let svg = Figure::new("t", 1, (300, 200))
        .with(panel)
        .to_svg()
        .unwrap();
    // The data lines: polylines in the series colour with three points (the legend's
    // sample pieces have two).
    let data_lines = svg
        .split('<')
        .filter(|e| e.starts_with("polyline") && e.contains("#1F77B4"))
        .filter(|e| {
            let pts = e.split("points=\"").nth(1).unwrap_or("");
            pts.split('"')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .count()
                == 3
        })
        .count();
    assert_eq!(data_lines, 2, "{svg}");
}

#[test]
fn fitted_log_range_is_whole_decades_and_bounded() {
    let r = fit_range(
        [3e-20, 2e-3, 0.5, -1.0, f64::NAN].into_iter(),
        Scale::Log,
        None,
    );
    assert_eq!(r.1, 1.0);
    assert!((r.0 - 1e-12).abs() < 1e-24, "{r:?}");
    let r = fit_range([2.0, 3.0].into_iter(), Scale::Linear, None);
    assert!(r.0 < 2.0 && r.1 > 3.0);
    assert_eq!(tick_label(1e-5), "1e-5");
    assert_eq!(tick_label(0.25), "0.25");
    assert_eq!(tick_label(20.0), "20");
    assert_eq!(axis_label(0.05, true), "0.05");
    assert_eq!(axis_label(0.07, true), "");
    assert_eq!(axis_label(0.07, false), "0.07");
}

#[test]
fn write_svg_is_atomic_and_complete() {
    let dir = std::env::temp_dir().join(format!("zs-plot-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fig.svg");
    sample_figure().write_svg(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.trim_end().ends_with("</svg>"));
    assert!(!dir.join("fig.svg.tmp").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
