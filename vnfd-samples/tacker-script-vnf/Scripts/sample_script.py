# Management script of the Script VNF, written in the style of OpenStack Tacker v2 samples:
# Tacker (and vnfm) run it as `python3 sample_script.py` with a pickled dict on stdin and
# read a pickled dict from stdout.
import os
import pickle
import sys


class FailScript(Exception):
    pass


class SampleScript(object):

    def __init__(self, req, inst, grant_req, grant, csar_dir):
        self.req = req
        self.inst = inst
        self.grant_req = grant_req
        self.grant = grant
        self.csar_dir = csar_dir

    def _fail(self, method):
        params = self.req.get('additionalParams') or {}
        if params.get('fail_' + method):
            raise FailScript(method + ' failed as asked by additionalParams')

    def _note(self, method):
        # What the hook did shows in the instance's metadata.
        meta = self.inst.setdefault('metadata', {})
        meta['lastScriptHook'] = method
        meta['scriptSawVnfd'] = os.path.isfile(
            os.path.join(self.csar_dir, 'Definitions', 'script_top.vnfd.yaml'))

    def instantiate_end(self):
        self._fail('instantiate_end')
        self._note('instantiate_end')

    def scale_end(self):
        self._fail('scale_end')
        self._note('scale_end')

    def terminate_start(self):
        self._fail('terminate_start')
        self._note('terminate_start')


def main():
    script_dict = pickle.load(sys.stdin.buffer)

    operation = script_dict['operation']
    req = script_dict['request']
    inst = script_dict['vnf_instance']
    grant_req = script_dict['grant_request']
    grant = script_dict['grant_response']
    csar_dir = script_dict['tmp_csar_dir']

    script = SampleScript(req, inst, grant_req, grant, csar_dir)
    try:
        getattr(script, operation)()
    except AttributeError:
        raise Exception("{} is not included in the script.".format(operation))

    output = {'vnf_instance': script.inst}
    sys.stdout.buffer.write(pickle.dumps(output))
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
        os._exit(0)
    except Exception as ex:
        sys.stderr.write(str(ex))
        sys.stderr.flush()
        os._exit(1)
