"""How many frames of a video the runner stand-in reads: the visual config's builder_config.num_frames as
video-neva's runner reads it (-1: every frame; multimodal_runner_facts.md), else the family format's count."""

import json

from cpu_runtime.runner_standin.formats import read_format
from cpu_runtime.runner_standin.runner import read_frames
from tests.media import ball_video


def write_config(folder, builder_extra: dict, runner_format: dict):
    config = {"builder_config": {"model_type": "video-neva", **builder_extra},
              "runner_format": {"family": "video-neva", "prompt": "{image}{question}", **runner_format}}
    (folder / "config.json").write_text(json.dumps(config))
    return read_format(folder)


def test_num_frames_from_the_builder_config_wins_then_the_family_count(tmp_path):
    assert write_config(tmp_path, {"num_frames": 6}, {"frames": 12, "twin_output": "frame_changes"}).video_frames() == 6
    assert write_config(tmp_path, {}, {"frames": 12}).video_frames() == 12
    assert write_config(tmp_path, {}, {}).video_frames() == 8
    fmt = write_config(tmp_path, {"num_frames": -1}, {"frames": 12})
    assert fmt.video_frames() == -1 and fmt.twin_output == ""


def test_frames_are_read_evenly_or_all(tmp_path):
    video = ball_video(tmp_path / "ball.gif", frames=10)
    assert len(read_frames(video, 4)) == 4
    assert len(read_frames(video, -1)) == 10
