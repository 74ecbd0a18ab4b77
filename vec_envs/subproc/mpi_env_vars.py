"""clear_mpi_env_vars: start worker processes without MPI's environment."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["clear_mpi_env_vars"]

_MPI_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MPI_")


@contextlib.contextmanager
def clear_mpi_env_vars() -> Iterator[None]:
    """Hide MPI variables while starting processes, restore them afterwards.

    Workers started under ``mpirun`` with these set believe they are MPI ranks and
    hang in ``MPI_Init``.

    Example:
        >>> with clear_mpi_env_vars():
        ...     pass  # start worker processes here
    """
    removed = {k: v for k, v in os.environ.items() if k.startswith(_MPI_PREFIXES)}
    for key in removed:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(removed)
