"""Videos for the Qwen2-VL / Qwen2.5-VL families: frames to ``pixel_values_videos``.

Shape letters: F frames, T temporal patches, N spatial patches of one frame, C channels,
P patch side, D patch features (C x temporal patch x P x P).

The family's video processor needs torchvision (not importable beside the CPU torch here),
so frames go through the PIL image processor, which resizes (within ``min_pixels`` ..
``max_pixels``), rescales and normalises each frame and lays its patches out in merge
order; :func:`frame_patches` then does the video processor's temporal patching: frames are
paired (``temporal_patch_size`` 2), an odd count padded by repeating the last frame, and
each pair's patches are interleaved on the temporal axis of a patch's features, giving
``pixel_values_videos`` (T*N, D) and ``video_grid_thw`` (1, 3) = (T, h, w) per video, as
``Qwen2VLVideoProcessor.patchify`` does. Each ``<|video_pad|>`` expands to
``T * h * w / merge**2`` pads. ``second_per_grid_ts`` (one per video) is the time a
temporal patch spans, ``temporal_patch_size / fps`` of the sampled frames: Qwen2.5-VL's
M-RoPE spaces its time axis by it (Qwen2-VL's ignores it).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightrft.adapters.hf import media_builder as media
from lightrft.adapters.hf.multimodal_inputs import MediaRequirements
from lightrft.domain.modality import VideoFrames

VIDEO_PAD = "<|video_pad|>"


def frame_patches(frames: list[Any], image_processor: Any) -> tuple[Tensor, Tensor]:
    """``pixel_values_videos`` (T*N, D) and ``video_grid_thw`` (1, 3) of one video's frames
    through the PIL ``image_processor`` (see the module doc)."""
    out = image_processor(images=frames, return_tensors="pt")
    grid: Tensor = out["image_grid_thw"].long()  # [F, 3], each (1, h, w)
    if len({tuple(row) for row in grid.tolist()}) != 1:
        raise ValueError(f"a video's frames were resized to different grids {grid.tolist()}")
    tps = int(image_processor.temporal_patch_size)
    patch = int(image_processor.patch_size)
    count, (_, h, w) = len(frames), grid[0].tolist()
    pixels = out["pixel_values"].reshape(count, h * w, -1, tps, patch, patch)
    pixels = pixels[:, :, :, 0]  # [F, N, C, P, P]: the image path repeats a frame tps times
    if pad := -count % tps:  # an odd count: repeat the last frame, as the video processor does
        pixels = torch.cat([pixels, pixels[-1:].expand(pad, *pixels.shape[1:])])
    steps = pixels.shape[0] // tps
    pixels = pixels.reshape(steps, tps, h * w, *pixels.shape[2:])  # [T, tps, N, C, P, P]
    pixels = pixels.permute(0, 2, 3, 1, 4, 5)  # [T, N, C, tps, P, P]
    return pixels.reshape(steps * h * w, -1), torch.tensor([[steps, h, w]])


class VideoEncoder(media.MediaEncoder):
    """Expands video pads and processes the videos (:class:`~lightrft.domain.modality.VideoFrames`) of prompt records.

    Args:
        tokenizer: the model's tokenizer (knows ``<|video_pad|>``).
        image_processor: the family's PIL image processor; its ``min_pixels`` /
            ``max_pixels`` bound every frame's size.
    """

    media_key, noun = "videos", "video"

    def __init__(self, tokenizer: Any, image_processor: Any, *, video_token: str = VIDEO_PAD):
        super().__init__(tokenizer, video_token, image_processor)
        self._merge = int(getattr(image_processor, "merge_size", 2))

    @property
    def requirements(self) -> MediaRequirements:
        """One ``<|video_pad|>`` per video (before expansion)."""
        return MediaRequirements(video_placeholder=self._token)

    def process(self, items: list[Any], where: str) -> media.ProcessedMedia:
        """``pixel_values_videos``, ``video_grid_thw`` (V, 3) and ``second_per_grid_ts`` (V,)."""
        pixels, grids, seconds = [], [], []
        for index, video in enumerate(items):
            if not isinstance(video, VideoFrames):
                raise ValueError(
                    f"{where}: video {index} is a {type(video).__name__}, not decoded frames "
                    "(rows' videos are read by the data layer's load_video)"
                )
            values, grid = frame_patches(list(video.frames), self._processor)
            pixels.append(values)
            grids.append(grid)
            seconds.append(float(self._processor.temporal_patch_size) / video.fps)
        grid_thw = torch.cat(grids)  # [V, 3]
        counts = (grid_thw.prod(-1) // self._merge**2).tolist()
        tensors = {
            "pixel_values_videos": torch.cat(pixels),
            "video_grid_thw": grid_thw,
            "second_per_grid_ts": torch.tensor(seconds, dtype=torch.float32),
        }
        return media.ProcessedMedia(tensors, counts, int(grid_thw.prod(-1).sum()))
