// The chat page: one self-contained document. It posts the conversation to
// /v1/chat/completions with stream: true and stream_options.include_usage, reads the SSE stream
// with fetch's reader, shows time to first token and tokens/s, and aborts on Stop (the server
// sees the closed connection and frees the slot).
#include "serve/web_page.h"

namespace spore::serve {

const char* chat_page_html() {
  return R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>spore chat</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:0;background:#f5f5f2;color:#222}
main{max-width:46rem;margin:0 auto;padding:1rem;display:flex;flex-direction:column;height:100vh;box-sizing:border-box}
#log{flex:1;overflow-y:auto}
.msg{margin:.5rem 0;padding:.6rem .8rem;border-radius:.5rem;white-space:pre-wrap}
.user{background:#dde8f5}.assistant{background:#fff;border:1px solid #ddd}.error{background:#f8d7d7;color:#700}
#figures{font-size:.8rem;color:#666;min-height:1.2em}
form{display:flex;gap:.5rem}textarea{flex:1;font:inherit;padding:.5rem}button{font:inherit;padding:.5rem 1rem}
</style></head><body><main>
<h3>spore chat <small id="model"></small></h3>
<div id="log"></div>
<div id="figures"></div>
<form id="form"><textarea id="input" rows="2" placeholder="Say something"></textarea>
<button id="send" type="submit">Send</button><button id="stop" type="button" disabled>Stop</button></form>
</main><script>
const log=document.getElementById('log'),input=document.getElementById('input'),figures=document.getElementById('figures');
const sendBtn=document.getElementById('send'),stopBtn=document.getElementById('stop');
const messages=[];let controller=null;
fetch('/v1/models').then(r=>r.json()).then(j=>{if(j.data)document.getElementById('model').textContent=j.data[0].id}).catch(()=>{});
function add(role,text){const d=document.createElement('div');d.className='msg '+role;d.textContent=text;log.appendChild(d);log.scrollTop=log.scrollHeight;return d;}
stopBtn.onclick=()=>{if(controller)controller.abort();};
document.getElementById('form').onsubmit=async e=>{
  e.preventDefault();const text=input.value.trim();if(!text||controller)return;
  input.value='';add('user',text);messages.push({role:'user',content:text});
  const out=add('assistant','');controller=new AbortController();sendBtn.disabled=true;stopBtn.disabled=false;
  const t0=performance.now();let first=null,n=0,answer='';
  try{
    const r=await fetch('/v1/chat/completions',{method:'POST',headers:{'Content-Type':'application/json'},signal:controller.signal,
      body:JSON.stringify({messages,stream:true,stream_options:{include_usage:true}})});
    if(!r.ok){const j=await r.json().catch(()=>({}));throw new Error((j.error&&j.error.message)||('HTTP '+r.status));}
    const reader=r.body.getReader(),dec=new TextDecoder();let buf='';
    for(;;){const {done,value}=await reader.read();if(done)break;buf+=dec.decode(value,{stream:true});
      let i;while((i=buf.indexOf('\n\n'))>=0){const ev=buf.slice(0,i);buf=buf.slice(i+2);
        if(!ev.startsWith('data: '))continue;const data=ev.slice(6);if(data==='[DONE]')continue;
        const j=JSON.parse(data);if(j.error)throw new Error(j.error.message);
        if(j.usage)n=j.usage.completion_tokens;
        const c=j.choices&&j.choices[0];if(c&&c.delta&&c.delta.content){if(first===null)first=performance.now()-t0;answer+=c.delta.content;out.textContent=answer;log.scrollTop=log.scrollHeight;}}
      const s=(performance.now()-t0-(first||0))/1000;
      figures.textContent='first token '+(first===null?'-':first.toFixed(0)+' ms')+(n>1&&s>0?', '+((n-1)/s).toFixed(1)+' tokens/s':'');}
    messages.push({role:'assistant',content:answer});
  }catch(err){if(err.name==='AbortError'){messages.push({role:'assistant',content:answer});figures.textContent+=' (stopped)';}
    else{add('error',String(err.message||err));messages.pop();}}
  finally{controller=null;sendBtn.disabled=false;stopBtn.disabled=true;}
};
</script></body></html>
)HTML";
}

}  // namespace spore::serve
