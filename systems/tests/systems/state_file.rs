//! The state-file format (`zs_systems::cli::state_file`): rows with and without velocities, and
//! its one-line errors.

use zs_systems::cli::state_file::*;

fn file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-state-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

#[test]
fn reads_rows_with_and_without_velocities() {
    let xy = names(&["x", "y"]);
    let p = file(
        "a.csv",
        "t,x,y,v_x,v_y,energy\n0,1,2,3,4,9\n0.5,1.5,2.5,3.5,4.5,9\n",
    );
    let rows = read(&p, &xy).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].q, vec![1.5, 2.5]);
    assert_eq!(rows[1].v, Some(vec![3.5, 4.5]));
    assert_eq!(
        last_state(&p, &xy).unwrap(),
        (0.5, vec![1.5, 2.5], vec![3.5, 4.5])
    );
    let p = file("b.csv", "t,x,y\n0,1,2\n");
    assert_eq!(read(&p, &xy).unwrap()[0].v, None);
    assert!(last_state(&p, &xy)
        .unwrap_err()
        .to_string()
        .contains("no velocity columns"));
    // Coordinates and an output column, no velocities: read.
    let p = file("b2.csv", "t,x,y,energy\n0,1,2,5\n");
    assert_eq!(read(&p, &xy).unwrap()[0].q, vec![1.0, 2.0]);
}

#[test]
fn a_file_of_another_system_or_size_is_refused() {
    // Three bodies into a two-body run: the velocities would be read from x3, v_x1.
    let p = file("big.csv", "t,x1,x2,x3,v_x1,v_x2,v_x3\n0,1,2,3,4,5,6\n");
    let e = read(&p, &names(&["x1", "x2"])).unwrap_err().to_string();
    assert!(
        e.contains("column 4 is `x3`, but this system's is `v_x1`"),
        "{e}"
    );
    assert!(e.contains("another system or size"), "{e}");
    // Another system's names.
    let p = file("dna.csv", "t,θ_0,θ_1,v_θ_0,v_θ_1\n0,1,2,3,4\n");
    let e = last_state(&p, &names(&["x1", "y1"]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column 2 is `θ_0`, but this system's is `x1`"),
        "{e}"
    );
    // Velocities of other names.
    let p = file("v.csv", "t,x,y,v_x,v_z\n0,1,2,3,4\n");
    let e = read(&p, &names(&["x", "y"])).unwrap_err().to_string();
    assert!(
        e.contains("column 5 is `v_z`, but this system's is `v_y`"),
        "{e}"
    );
}

#[test]
fn reports_bad_files_on_one_line() {
    let x = names(&["x"]);
    let p = file("c.csv", "time,x\n0,1\n");
    assert!(read(&p, &x)
        .unwrap_err()
        .to_string()
        .contains("first column must be `t`"));
    let p = file("d.csv", "t,x\n0,1\n");
    assert!(read(&p, &names(&["x", "y"]))
        .unwrap_err()
        .to_string()
        .contains("1 columns after `t`, but the system has 2"));
    let p = file("e.csv", "t,x,v_x\n0,abc,1\n");
    assert!(read(&p, &x)
        .unwrap_err()
        .to_string()
        .contains("line 2, column 2 (`x`): `abc` is not a number"));
    let p = file("f.csv", "t,x,v_x\n0,1\n");
    assert!(read(&p, &x)
        .unwrap_err()
        .to_string()
        .contains("a row has 2 fields"));
    let p = file("g.csv", "t,x,v_x\n");
    assert!(last_state(&p, &x)
        .unwrap_err()
        .to_string()
        .contains("no state"));
    let p = file("h.csv", "t,x,v_x\n0,inf,1\n");
    assert!(last_state(&p, &x)
        .unwrap_err()
        .to_string()
        .contains("not finite"));
    let missing = std::env::temp_dir().join("zs-no-such-dir/none.csv");
    assert!(read(&missing, &x)
        .unwrap_err()
        .to_string()
        .starts_with("cannot read the state file"));
    for e in [read(&p, &x).err(), last_state(&p, &x).err()]
        .into_iter()
        .flatten()
    {
        assert!(!e.to_string().contains('\n'));
    }
}
