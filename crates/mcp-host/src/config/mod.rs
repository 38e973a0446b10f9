//! Configuration: which servers to run or reach, read from the global and the project file.
