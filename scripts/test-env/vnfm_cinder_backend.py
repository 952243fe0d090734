"""The volume backend of the test cloud's cinder-volume (scripts/test-env/openstack.sh).

Cinder's own fake backend, `cinder.tests.fake_driver.FakeLoggingVolumeDriver`, keeps volumes
as rows only, but inherits LVM's image copies, which read and write the volume's block device
(/dev/mapper/...), absent here. This subclass replaces only those two methods, and reports
the multiattach capability LVM reports (the fake pool leaves it out, and Tacker's samples put
their volumes in a volume type that requires it). Creating a
volume from an image still runs Cinder's whole flow (scheduling, the download of the image
from Glance, the format and size checks with qemu-img, the image metadata, the bootable flag);
the image's bytes are then dropped: the backend stores no data.
"""

from oslo_log import log as logging

from cinder.tests import fake_driver

LOG = logging.getLogger(__name__)


class ImageRecordingDriver(fake_driver.FakeLoggingVolumeDriver):
    """FakeLoggingVolumeDriver whose image copies are recorded instead of written."""

    def _update_volume_stats(self):
        super()._update_volume_stats()
        for pool in self._stats["pools"]:
            pool["multiattach"] = True

    def copy_image_to_volume(self, context, volume, image_service, image_id,
                             disable_sparse=False):
        LOG.info("copy_image_to_volume: image %s into volume %s (no data stored)",
                 image_id, volume.id)

    def copy_volume_to_image(self, context, volume, image_service, image_meta):
        LOG.info("copy_volume_to_image: volume %s into image %s refused",
                 volume.id, image_meta.get("id"))
        raise NotImplementedError(
            "the test cloud's volume backend stores no data to upload")
