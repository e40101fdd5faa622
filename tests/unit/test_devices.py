"""stack/devices.py: the disk under a directory, named as node_exporter names it."""

from __future__ import annotations

import os

from stack.devices import block_device


def fake_sys_block(tmp_path, target: str, partition: bool):
    """A /sys/dev/block whose entry for tmp_path's device points at ``target`` under a fake devices tree."""
    st = os.stat(tmp_path)
    device = tmp_path / "devices" / target
    device.mkdir(parents=True)
    if partition:
        (device / "partition").write_text("1\n")
    sys_block = tmp_path / "sys-dev-block"
    sys_block.mkdir()
    (sys_block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(device)
    return str(sys_block)


def test_a_whole_disk_is_named_by_itself(tmp_path):
    assert block_device(str(tmp_path), fake_sys_block(tmp_path, "pci0/block/nvme0n1", partition=False)) == "nvme0n1"


def test_a_partition_is_named_by_its_disk(tmp_path):
    assert block_device(str(tmp_path), fake_sys_block(tmp_path, "pci0/block/sda/sda2", partition=True)) == "sda"


def test_no_block_device_is_an_empty_name(tmp_path):
    empty = tmp_path / "sys"
    empty.mkdir()
    assert block_device(str(tmp_path), str(empty)) == ""
    assert block_device(str(tmp_path / "missing")) == ""


def test_this_machines_root_is_on_a_disk_sysfs_knows():
    name = block_device("/")
    assert name == "" or os.path.exists(os.path.join("/sys/block", name)), name
