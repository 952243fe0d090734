# Management script of the Script VNF, written in the style of OpenStack Tacker v2 samples:
# Tacker (and vnfm) run it as `python3 sample_script.py` with a pickled dict on stdin and
# read a pickled dict from stdout.
#
# additionalParams of the request make a hook misbehave, for tests of how the VNFM copes:
# `fail_<hook>` (raise), `garbage_<hook>` (print text instead of a pickle),
# `hang_<hook>: <file>` (start a child, write both process ids to <file>, then hang) and
# `outside_<hook>: <file>` (write the temporary CSAR directory's path to <file>, outside it).
import os
import pickle
import subprocess
import sys
import time


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
        if params.get('outside_' + method):
            with open(params['outside_' + method], 'w') as f:
                f.write(self.csar_dir + '\n')
        if params.get('hang_' + method):
            child = subprocess.Popen(['sleep', '300'])
            with open(params['hang_' + method], 'w') as f:
                f.write('%d %d\n' % (os.getpid(), child.pid))
            time.sleep(300)
        if params.get('garbage_' + method):
            sys.stdout.write('all good!\n')
            sys.stdout.flush()
            os._exit(0)

    def _note(self, method):
        # What the hook did shows in the instance's metadata.
        meta = self.inst.setdefault('metadata', {})
        meta['lastScriptHook'] = method
        meta['scriptSawVnfd'] = os.path.isfile(
            os.path.join(self.csar_dir, 'Definitions', 'script_top.vnfd.yaml'))
        # The grant exchange of the operation, when it had one.
        meta['scriptSawGrant'] = bool(
            self.grant and self.grant_req and
            self.grant['vnfLcmOpOccId'] == self.grant_req['vnfLcmOpOccId'])

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
