"""Helpers the tests and benchmarks share that are not fakes: generators of real test inputs."""
