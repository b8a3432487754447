// The one way the backend includes <mpi.h>: Open MPI's and MPICH's headers
// pull in the long-deprecated C++ bindings unless told not to, and we use
// only the C API (no link dependency on libmpi_cxx, faster builds).
#pragma once
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
