//! The report of `zs reproduce alkane`: CSV files, the figure, the tables.

use super::*;

/// Write `alkane.csv` (each run's estimates), `alkane-torsions.csv`, `alkane-scan.csv` and
/// `alkane.svg` (torsion distributions, energy error against the step), and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let names = Config::observables();
    let reference = &out.runs[0];
    let mut header = vec!["method".to_string(), "h (fs)".into()];
    for n in names {
        header.extend([n.to_string(), format!("se {n}"), format!("z {n}")]);
    }
    header.extend(["seconds per ps".into(), "reproduces".into()]);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut csv = Csv::new(&header);
    let mut table_header = vec!["method", "h (fs)"];
    table_header.extend(names);
    table_header.extend(["s per ps", "status"]);
    let mut table = Table::new(
        format!(
            "GLA at {} K, mean ± standard error ({} blocks) (z against the first row, the reference)",
            cfg.temperature, cfg.blocks
        ),
        &table_header,
    );
    for r in &out.runs {
        let (rows, ok) = compare_series(
            &reference.series,
            &r.series,
            cfg.blocks,
            r.failure.is_some(),
        );
        let mut fields = vec![Field::Text(r.method.label()), Field::Num(r.h)];
        let mut cells = vec![r.method.label().to_string(), format!("{}", r.h)];
        for row in &rows {
            match row {
                Some((m, e, z)) => {
                    fields.extend([Field::Num(*m), Field::Num(*e), Field::Num(*z)]);
                    cells.push(format!("{m:.4} ± {e:.4} ({z:+.1})"));
                }
                None => {
                    fields.extend([Field::Text(""), Field::Text(""), Field::Text("")]);
                    cells.push("—".into());
                }
            }
        }
        fields.extend([
            Field::Num(1000.0 * r.seconds_per_time()),
            Field::Text(if ok { "true" } else { "false" }),
        ]);
        csv.push(&fields);
        cells.push(format!("{:.2}", 1000.0 * r.seconds_per_time()));
        cells.push(match &r.failure {
            Some(f) => format!("failed: {f}"),
            None if ok => "reproduces".into(),
            None => "differs".into(),
        });
        table.push(cells);
    }
    let csv_path = dir.join("alkane.csv");
    csv.write(&csv_path)?;

    let width = 360.0 / cfg.bins as f64;
    let centre = |i: usize| -180.0 + (i as f64 + 0.5) * width;
    let labels: Vec<String> = out
        .runs
        .iter()
        .map(|r| format!("{} h={}", r.method.label(), r.h))
        .collect();
    let mut torsion_header = vec!["phi (deg)"];
    torsion_header.extend(labels.iter().map(String::as_str));
    let mut torsions = Csv::new(&torsion_header);
    for i in 0..cfg.bins {
        let mut row = vec![Field::Num(centre(i))];
        row.extend(out.runs.iter().map(|r| Field::Num(r.density[i])));
        torsions.push(&row);
    }
    let torsions_path = dir.join("alkane-torsions.csv");
    torsions.write(&torsions_path)?;

    let methods = [
        Method::Verlet,
        Method::Rattle,
        Method::ZssStiff,
        Method::Penalty,
    ];
    let mut scan_csv = Csv::new(&["h (fs)", "method", "max |E - E0| / KE0"]);
    let mut scan_header = vec!["h (fs)"];
    scan_header.extend(methods.map(Method::label));
    let mut scan_table = Table::new(
        format!(
            "NVE from the equilibrated state, {} fs: max |E − E0| / KE0 (— : a step failed or a site left the skin)",
            cfg.scan_time
        ),
        &scan_header,
    );
    for &h in &cfg.scan {
        let mut cells = vec![format!("{h}")];
        for m in methods {
            let error = out
                .scan
                .iter()
                .find(|p| p.method == m && p.h == h)
                .and_then(|p| p.error);
            scan_csv.push(&[
                Field::Num(h),
                Field::Text(m.label()),
                error.map_or(Field::Text(""), Field::Num),
            ]);
            cells.push(error.map_or_else(|| "—".into(), |e| format!("{e:.2e}")));
        }
        scan_table.push(cells);
    }
    let scan_path = dir.join("alkane-scan.csv");
    scan_csv.write(&scan_path)?;

    let mut phi = Panel::new(
        "torsion angle",
        "φ (degrees)",
        "probability density (1/degree)",
    )
    .legend(LegendPosition::UpperLeft);
    for (c, r) in out.runs.iter().enumerate() {
        if r.failure.is_none() {
            let pts = (0..cfg.bins).map(|i| (centre(i), r.density[i])).collect();
            let style = if c == 0 { Style::Dashed } else { Style::Line };
            phi = phi.with(Series::new(&labels[c], pts, style, c));
        }
    }
    let mut energy = Panel::new("NVE energy error", "h (fs)", "max |E − E0| / KE0")
        .scales(Scale::Log, Scale::Log)
        .legend(LegendPosition::UpperLeft);
    for (c, m) in methods.into_iter().enumerate() {
        let pts = out
            .scan
            .iter()
            .filter(|p| p.method == m)
            .filter_map(|p| p.error.map(|e| (p.h, e)))
            .collect();
        energy = energy.with(Series::new(m.label(), pts, Style::LineMarkers, c));
    }
    let svg_path = dir.join("alkane.svg");
    Figure::new(
        format!(
            "Liquid butane, TraPPE-UA, {} sites at {} g/cm³: torsions under Langevin, energy error in NVE",
            out.sites, cfg.density
        ),
        2,
        (620, 420),
    )
    .with(phi)
    .with(energy)
    .write_svg(&svg_path)?;

    let mut notes = vec![format!(
        "{} sites, {} threads; equilibrated {} fs (Verlet 1 fs, GLA), then each run {} fs from that state, a sample every {} fs; seconds are the steps' wall time (LAMMPS: its loop time, 1 process).",
        out.sites, out.threads, cfg.equil, cfg.prod, cfg.sample_dt
    )];
    let bound = out
        .scan
        .iter()
        .find(|p| p.method == Method::Verlet && p.h == 1.0)
        .and_then(|p| p.error);
    if let Some(bound) = bound {
        let mut line =
            format!("Largest step at the accuracy of Verlet at 1 fs (NVE error ≤ {bound:.2e}):");
        for m in methods {
            let _ = write!(
                line,
                " {} {};",
                m.label(),
                largest_step(out, m, bound).map_or_else(|| "none".into(), |h| format!("{h} fs"))
            );
        }
        notes.push(line);
    }
    let mut finite = "Largest step that completes the NVE run:".to_string();
    for m in methods {
        let _ = write!(
            finite,
            " {} {};",
            m.label(),
            largest_step(out, m, f64::INFINITY)
                .map_or_else(|| "none".into(), |h| format!("{h} fs"))
        );
    }
    notes.push(finite);
    if let Some(note) = &out.lammps_note {
        notes.push(format!("LAMMPS not run beside zs: {note}."));
    }
    Ok(Report {
        experiment: "alkane".into(),
        setup: format!(
            "TraPPE-UA liquid of {} C{} molecules at {} g/cm³ (seed {}), GLA Langevin at {} K (γ = {} kcal/mol·fs/Å²), noise seed {}.",
            cfg.molecules, cfg.length, cfg.density, cfg.seed, cfg.temperature, cfg.gamma, cfg.seed + 1
        ),
        tables: vec![table, scan_table],
        notes,
        files: vec![csv_path, torsions_path, scan_path, svg_path],
    })
}
