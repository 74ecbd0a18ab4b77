from setuptools import Extension, find_packages, setup

# RunningMeanStd's one-pass uint8 kernel (VecNormalize over images). Optional: without a
# C compiler the install goes on and vec_envs.wrappers.running_mean_std uses NumPy instead.
rms_kernel = Extension(
    "vec_envs.wrappers._rms_kernel",
    sources=["wrappers/_rms_kernel.c"],
    extra_compile_args=["-O3", "-fno-math-errno", "-ffp-contract=off"],
    optional=True,
)

# EnvSlice's step loop over the envs with nothing to say (every backend's per-env step), and
# their infos. Optional too: without it vec_envs/stepping/ steps each env in Python.
step_kernel = Extension(
    "vec_envs.stepping._step_kernel",
    sources=["vec_envs/stepping/_step_kernel.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

# The subprocess transport's look at its lanes (a worker's new requests and answers, the
# parent's answered envs) in one pass each. Optional too: without it NumPy does the same.
lanes_kernel = Extension(
    "vec_envs.subproc.shared._lanes_kernel",
    sources=["vec_envs/subproc/shared/_lanes_kernel.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

extras = {
    "atari": ["ale-py>=0.12"],  # 0.12: the C++ vector engine with same-step auto-reset (ALEVecEnv)
    "ray": ["ray>=2.9"],
    "video": ["imageio>=2.30", "imageio-ffmpeg>=0.4.9"],
    "bench": ["matplotlib>=3.7", "psutil>=5.9"],
    "sb3": ["stable-baselines3>=2.3"],
    # PettingZoo ParallelEnvs as VecEnvs with a row per agent (vec_envs.multiagent); mpe2 has
    # simple_spread_v3, which the examples, the training script and the benchmark use
    "multiagent": ["pettingzoo>=1.24", "mpe2>=1.0"],
    # the documentation site: python -m sphinx -W --keep-going -b html docs docs/_build/html
    "docs": ["sphinx>=7.2", "myst-parser>=2.0", "furo>=2024.1", "sphinx-copybutton>=0.5"],
}
# The test extra installs every other extra, so no test is skipped; torch is pinned to the
# release whose CPU build lies on the CI machines (no CUDA download).
extras["test"] = sorted(
    {"pytest>=8.1", "pytest-timeout>=2.2", "hypothesis>=6.100", "psutil>=5.9", "ruff~=0.17.6", "mypy~=2.4.1",
     "torch==2.13.0", "supersuit>=3.9"}  # supersuit: the multi-agent benchmark's contender
    | {req for name in ("atari", "ray", "video", "bench", "sb3", "multiagent", "docs") for req in extras[name]}
)

setup(
    name="vec_envs",
    version="0.1.0",
    description="Fast, hard-to-break vectorized RL environments (baselines-style API on gymnasium)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    # vec_envs/wrappers is a link to the top-level wrappers/ folder: the wrappers install as
    # vec_envs.wrappers, and site-packages gets no top-level package of that common name
    packages=find_packages(include=["vec_envs", "vec_envs.*"]),
    package_data={"vec_envs": ["py.typed"], "vec_envs.wrappers": ["py.typed"]},
    ext_modules=[rms_kernel, step_kernel, lanes_kernel],
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24",
        "gymnasium>=1.0",
        "cloudpickle>=2.0",
        "opencv-python>=4.8",
        "tqdm>=4.60",
    ],
    extras_require=extras,
    entry_points={
        "console_scripts": [
            "vec-envs-run-atari = vec_envs.cli.run_atari:main",
            "vec-envs-train-ppo = vec_envs.cli.train_ppo:main",
            "vec-envs-convert-vecnormalize = vec_envs.cli.convert_vecnormalize:main",
            "vec-envs-train-multiagent = vec_envs.cli.train_multiagent:main",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
