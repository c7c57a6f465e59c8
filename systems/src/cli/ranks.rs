//! The processes that share an ensemble or a replica-exchange ladder ([`Ranks`]): this process
//! alone, or, with the `mpi` feature, the ranks of `MPI_COMM_WORLD` under `mpirun`. Replica k
//! belongs to one rank (a contiguous block each, [`Ranks::block`]); the only collective is a
//! bitwise OR of 64-bit words ([`Ranks::combine`]), in which each rank fills the entries of the
//! replicas it holds and leaves zeros elsewhere — exact, so the combined figures are the same
//! bits whatever the number of ranks.

use std::ops::Range;

use super::error::CliError;

/// This process's place among the processes of a run.
pub(crate) struct Ranks {
    rank: usize,
    size: usize,
    /// MPI's environment (finalised when dropped); the world communicator is made where it is
    /// used, for a communicator handle may not cross threads and the collectives run on a
    /// rayon worker.
    #[cfg(feature = "mpi")]
    universe: Option<mpi::environment::Universe>,
}

impl Ranks {
    /// This process alone; or, built with `mpi`, the MPI world (MPI initialised here, with
    /// `MPI_THREAD_SERIALIZED`: the collectives are called from a rayon worker, one at a time).
    ///
    /// # Errors
    /// Started by `mpirun` with more than one rank but built without `mpi` (every rank would
    /// run every replica and write the same files).
    pub(crate) fn world(command: &'static str) -> Result<Self, CliError> {
        // `command`: `temper` or `ensemble`, for the message of a build without MPI.
        #[cfg(feature = "mpi")]
        {
            use mpi::traits::Communicator;
            let _ = command;
            if let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            {
                let world = universe.world();
                let (rank, size) = (world.rank() as usize, world.size() as usize);
                return Ok(Self {
                    rank,
                    size,
                    universe: Some(universe),
                });
            }
        }
        #[cfg(not(feature = "mpi"))]
        {
            let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"]
                .iter()
                .filter_map(|v| std::env::var(v).ok())
                .filter_map(|v| v.parse::<usize>().ok())
                .max()
                .unwrap_or(1);
            if launched > 1 {
                return Err(CliError::NeedsFeature {
                    what: format!("zs {command} under mpirun with {launched} ranks"),
                    feature: "mpi",
                    command: format!(
                        "cargo build --release -p zs-systems --features mpi --bin zs, then mpirun -np {launched} target/release/zs {command} …"
                    ),
                });
            }
        }
        Ok(Self {
            rank: 0,
            size: 1,
            #[cfg(feature = "mpi")]
            universe: None,
        })
    }

    /// The number of ranks (1 without MPI).
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Rank 0: the one that writes the shared files and prints the summary.
    pub(crate) fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// This rank's replicas of `n`: `⌊r n / P⌋ .. ⌊(r + 1) n / P⌋` (empty when there are more
    /// ranks than replicas).
    pub(crate) fn block(&self, n: usize) -> Range<usize> {
        self.rank * n / self.size..(self.rank + 1) * n / self.size
    }

    /// Wait for every rank (nothing to do alone): the exchange round's timing separates the
    /// wait for the slowest rank from the all-reduce itself.
    pub(crate) fn barrier(&self) {
        #[cfg(feature = "mpi")]
        if self.universe.is_some() {
            use mpi::traits::CommunicatorCollectives;
            mpi::topology::SimpleCommunicator::world().barrier();
        }
    }

    /// Bitwise OR of `words` over the ranks, in place (nothing to do alone).
    pub(crate) fn combine(&self, words: &mut [u64]) {
        #[cfg(feature = "mpi")]
        if self.universe.is_some() {
            use mpi::collective::SystemOperation;
            use mpi::traits::CommunicatorCollectives;
            let world = mpi::topology::SimpleCommunicator::world();
            let mine = words.to_vec();
            world.all_reduce_into(&mine[..], words, SystemOperation::bitwise_or());
        }
        #[cfg(not(feature = "mpi"))]
        let _ = words;
    }
}

/// `x` as the words of [`Ranks::combine`] (0 is +0.0, the entry of a replica held elsewhere).
pub(crate) fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// `text` as `words` 64-bit words (UTF-8, cut at a character boundary, zero-padded).
pub(crate) fn text_words(text: &str, words: usize) -> Vec<u64> {
    let mut end = text.len().min(8 * words);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut bytes = text.as_bytes()[..end].to_vec();
    bytes.resize(8 * words, 0);
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// The text of [`text_words`].
pub(crate) fn words_text(words: &[u64]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
