// `autobatch run` split over MPI processes (mpirun -np K, srun): the only
// code of the project that calls MPI. Compiled into the CLI when the build
// found MPI (AUTOBATCH_MPI); without mpirun the CLI never calls it, so the
// same binary runs alone as before.
#pragma once
#include "cli/commands.h"

namespace ab::mpi {

// True when this process was started by an MPI launcher (Open MPI's mpirun,
// or a PMI/PMIx launcher such as Slurm's srun), from the environment only:
// no MPI call.
bool launched();

// The `run` command over every process of MPI_COMM_WORLD: the same outputs,
// --stats totals and exit status as one process; rank 0 prints or writes the
// outputs and reports errors (once). Initializes and finalizes MPI.
int run(const cli::Options& opt);

}  // namespace ab::mpi
