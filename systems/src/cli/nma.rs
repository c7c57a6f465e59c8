//! `zs nma <system> [--data FILE] [--init FILE] [--n N] [--omega W] [--minimize]
//! [--lowest K [--shift S]] [--out FILE] [--modes FILE.xyz]`:
//! normal-mode analysis at a state ([`zs_runtime::modes`]): the eigenvalues of
//! `M^{-1/2} H M^{-1/2}` from the exact generated Hessian, ascending, one CSV row per mode —
//! `mode`, `eigenvalue`, `frequency` (the system's unit: cm⁻¹ for water and the alkane, else
//! the angular frequency `√λ` in its time unit; negative for a negative eigenvalue), `kind`
//! (`translation`, `rotation`, `rigid` for a mix of the two, `vibration`), and the fractions
//! `translation`, `rotation` of the mode in the span of the rigid motions (systems of 3-D point
//! sites, of which a periodic box has the translations only; empty otherwise). Constrained
//! systems are analysed through their penalty `V + ½ω²|g|²` (`--omega`, default the paper's
//! ω). The condensed-phase systems read their topology and state from `--data`. `--modes`
//! writes every non-rigid mode (at most the lowest 100) as an extended-XYZ animation, one cycle
//! of 16 frames each, for VMD, OVITO or ASE.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::error::CliError;
use super::system::modes::FRAMES;
use super::NmaArgs;

/// Run `zs nma`.
///
/// # Errors
/// An option that does not apply, an unreadable state, a failed minimisation or eigensolve,
/// an output that cannot be written.
pub fn nma(args: &NmaArgs) -> Result<(), CliError> {
    let sys = args.system.get();
    if args.modes.is_some() && args.modes == args.out {
        return Err(CliError::SameFile {
            first: "--out",
            second: "--modes",
            path: args.modes.clone().unwrap_or_default(),
        });
    }
    if args.data.is_some() && !sys.accepts().data {
        return Err(CliError::applies_only_to(
            "--data",
            args.system.all().which(|s| s.accepts().data),
            format!("zs nma {}", sys.name()),
        ));
    }
    super::systems::check_nma(args)?;
    let started = std::time::Instant::now();
    let spectrum = sys.nma(args)?;
    let seconds = started.elapsed().as_secs_f64();
    let rigid = spectrum.rigid();
    let kinds: Vec<(&str, Option<(f64, f64)>)> = (0..spectrum.modes.len())
        .map(|k| spectrum.kind(k, rigid.as_ref()))
        .collect();
    let mut csv = String::from("mode,eigenvalue,frequency,kind,translation,rotation\n");
    for (k, (kind, overlaps)) in kinds.iter().enumerate() {
        let _ = write!(
            csv,
            "{k},{:e},{:e},{kind},",
            spectrum.eigenvalue(k),
            spectrum.frequency(k)
        );
        match overlaps {
            Some((t, r)) => {
                let _ = writeln!(csv, "{t:.6},{r:.6}");
            }
            None => csv.push_str(",\n"),
        }
    }
    if let Some(path) = &args.modes {
        let text = spectrum.animation(&kinds)?;
        write(path, &text)?;
    }
    if let Some(path) = &args.out {
        write(path, &csv)?;
    }
    let count = |kind: &str| kinds.iter().filter(|(k, _)| *k == kind).count();
    println!("zs nma: {}", spectrum.about);
    if let Some((steps, rms)) = spectrum.minimized {
        println!("    minimised first: L-BFGS, {steps} iterations, RMS force {rms:.1e}");
    }
    println!(
        "    {} modes in {seconds:.2} s (exact Hessian, {}); frequencies in {}",
        spectrum.modes.len(),
        if args.lowest.is_some() {
            "the lowest by shift-invert Lanczos on the sparse solver"
        } else {
            "dense symmetric eigensolver"
        },
        spectrum.units.name
    );
    if rigid.is_some() {
        println!(
            "    rigid motions: {} translation, {} rotation, {} mixed; {} vibrations",
            count("translation"),
            count("rotation"),
            count("rigid"),
            count("vibration")
        );
    }
    let vib: Vec<usize> = (0..kinds.len())
        .filter(|&k| kinds[k].0 == "vibration")
        .collect();
    if let (Some(&lo), Some(&hi)) = (vib.first(), vib.last()) {
        println!(
            "    vibrations from {:.6e} to {:.6e} ({})",
            spectrum.frequency(lo),
            spectrum.frequency(hi),
            spectrum.units.name
        );
    }
    match &args.out {
        Some(path) => println!("    modes          {}", path.display()),
        None => print!("{csv}"),
    }
    if let Some(path) = &args.modes {
        println!(
            "    animation      {} (extended XYZ, {FRAMES} frames per mode)",
            path.display()
        );
    }
    Ok(())
}

fn write(path: &PathBuf, text: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::io("create the output directory", dir, e))?;
    }
    zs_runtime::files::write_atomic(Path::new(path), text.as_bytes())
        .map_err(|e| CliError::io("write", path, e))
}
