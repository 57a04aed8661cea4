// A person invited by an operator, end to end: `pixelfleet admin user create --email` over real
// gRPC, the invitation through a real SMTP server, its link followed to set a password, and a
// dashboard sign-in with it. The HTTP pages that take the link come with the dashboard (issue 24);
// here the link's token goes to the same service they call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '@pixelfleet/control-plane';
import { SqliteMailOutboxRepository } from '@pixelfleet/control-plane/test-support';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { SmtpReceiver, mailBody, mailHeader } from '../support/smtp-receiver';

const FROM = 'Pixelfleet <noreply@pixelfleet.test>';
let smtp: SmtpReceiver;
let t: TestControlPlane;

beforeAll(async () => {
  smtp = await SmtpReceiver.start();
  t = await startTestControlPlane({ overrides: { mail: { smtp: { url: smtp.url }, from: FROM } } });
});

afterAll(async () => {
  await t?.destroy();
  await smtp?.close();
});

async function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runAdminCli(args, {
    env: { PIXELFLEET_ADMIN_SERVER: t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
  });
  return { code, stdout, stderr };
}

describe('an invited person', () => {
  it('gets a mail from `admin user create`, sets a password through its link once, and signs in with it', async () => {
    const created = await admin(['user', 'create', '--email', 'ada@example.com']);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('An invitation to set a dashboard password goes to ada@example.com (the link works once, for 72 hours).');
    const userId = /usr_[0-9a-f]{24}/.exec(created.stdout)?.[0];
    expect(userId).toBeDefined();

    const [mail] = await smtp.received(1);
    expect(mail!.to).toEqual(['ada@example.com']);
    expect(mailHeader(mail!.raw, 'From')).toBe(FROM);
    expect(mailHeader(mail!.raw, 'Subject')).toBe('Your Pixelfleet account');
    const body = mailBody(mail!.raw);
    // The link names the dashboard this control plane serves; its token is in the fragment, which no request carries.
    const link = new RegExp(`${t.started.publicUrls.dashboard.replace(/[.]/g, '\\.')}/set-password#token=(pfi_[A-Za-z0-9_-]{43})`).exec(body);
    expect(link, body).not.toBeNull();
    expect(t.started.publicUrls.dashboard).toBe(`${t.started.httpOrigin}/dashboard`);

    // Delivered: the outbox keeps the record, not the link.
    await t.cp.mail.idle();
    expect(new SqliteMailOutboxRepository(t.cp.db).list(1)).toEqual([expect.objectContaining({ to: 'ada@example.com', state: 'sent', bodyKept: false })]);

    const token = link![1]!;
    await expect(t.cp.people.setPasswordWithLink(token, 'invitation', 'too short')).rejects.toMatchObject({ message: 'the password must have at least 12 characters' });
    expect((await t.cp.people.setPasswordWithLink(token, 'invitation', 'correct horse battery')).userId).toBe(userId);
    await expect(t.cp.people.setPasswordWithLink(token, 'invitation', 'correct horse battery')).rejects.toMatchObject({ kind: 'not_found' });
    const signedIn = await t.cp.people.signIn('ada@example.com', 'correct horse battery', '127.0.0.1');
    expect(signedIn).toMatchObject({ kind: 'signedIn', user: { userId } });

    // The address is taken: a second `user create` is refused, and no mail goes.
    const again = await admin(['user', 'create', '--email', 'ADA@example.com']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('ALREADY_EXISTS');
    expect(smtp.mails).toHaveLength(1);
  });

  it('`user create --json` says the invitation was mailed', async () => {
    const r = await admin(['user', 'create', '--email', 'bob@example.com', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ userId: expect.stringMatching(/^usr_/) as unknown, invitationMailed: true });
    const mails = await smtp.received(2);
    expect(mails[1]!.to).toEqual(['bob@example.com']);
  });

  it('`member add --email` for a new address makes the user, gives it access and mails the invitation; for a member with a password, no mail', async () => {
    const owner = await t.cp.accounts.createUser('owner@example.com');
    const projectId = (await t.cp.accounts.createProject(owner.userId, 'Showroom', 'europe')).projectId;
    const before = smtp.mails.length;
    const added = await admin(['member', 'add', '--project', projectId, '--email', 'dan@example.com', '--access', 'READONLY', '--json']);
    expect(added.code).toBe(0);
    const reply = JSON.parse(added.stdout) as { userId: string; invitationMailed: boolean };
    expect(reply).toEqual({ projectId, userId: expect.stringMatching(/^usr_/) as unknown, access: 'READONLY', invitationMailed: true });
    expect((await t.cp.people.invite('dan@example.com')).user.userId).toBe(reply.userId); // the same person
    const mails = await smtp.received(before + 2);
    expect(mails[before]!.to).toEqual(['dan@example.com']);

    // Ada has a password (the first case): she is added, and mailed nothing.
    const ada = await admin(['member', 'add', '--project', projectId, '--email', 'ada@example.com', '--access', 'FULL']);
    expect(ada.code).toBe(0);
    expect(ada.stdout).not.toContain('invitation');
    expect(smtp.mails).toHaveLength(before + 2);

    // A project that does not exist: refused before anyone is invited.
    const typo = await admin(['member', 'add', '--project', 'prj_nope', '--email', 'eve@example.com', '--access', 'FULL']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('NOT_FOUND');
    expect((await t.cp.people.invite('eve@example.com')).created).toBe(true); // eve was not made by the refused call
    // --user and --email together, or neither: a usage error.
    expect((await admin(['member', 'add', '--project', projectId, '--access', 'FULL'])).code).toBe(2);
    expect((await admin(['member', 'add', '--project', projectId, '--user', reply.userId, '--email', 'dan@example.com', '--access', 'FULL'])).code).toBe(2);
  });
});

